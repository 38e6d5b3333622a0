// SPDX-License-Identifier: Apache-2.0
// Tests for the trace parsers, the file loader and trace_stats, on real openb files and inline CSV.
#include "sim/trace.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "core/strings.h"

namespace cardiac::sim {
namespace {

const std::string kOpenb = std::string(CARDIAC_FIXTURES_DIR) + "/traces/alibaba-openb/";

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The error text of a parse that must fail.
std::string generic_error(std::string_view text) {
  auto t = parse_generic_csv(text, "t.csv");
  EXPECT_FALSE(t.has_value()) << "parsed although it should not: " << text;
  return t ? std::string() : t.error().what();
}

TEST(OpenbTrace, DefaultListCountsMatchTheRawFile) {
  auto t = load_trace(kOpenb + "openb_pod_list_default.csv", "auto");
  ASSERT_TRUE(t) << t.error().what();
  // awk -F, 'NR>1 && $4>0 && $11!=""' | wc -l: 6203; num_gpu == 0: 1088; GPU with empty
  // scheduled_time (all pod_phase Pending): 861. 6203 + 1088 + 861 = 8152 tasks.
  EXPECT_EQ(t->jobs.size(), 6203u);
  EXPECT_EQ(t->skipped, 1949u);
  EXPECT_EQ(t->jobs.size() + t->skipped, 8152u);
  ASSERT_EQ(t->notes.size(), 2u);
  EXPECT_EQ(t->notes[0], "1088 CPU-only pods (num_gpu 0)");
  EXPECT_EQ(t->notes[1], "861 GPU pods never scheduled (empty scheduled_time)");
  for (std::size_t i = 1; i < t->jobs.size(); ++i) {
    const auto& a = t->jobs[i - 1];
    const auto& b = t->jobs[i];
    ASSERT_TRUE(a.submit < b.submit || (a.submit == b.submit && a.id < b.id)) << i;
  }
  const TraceJob& second = t->jobs[1];  // openb-pod-0001,6000,12288,1,460,,LS,Running,427061,...
  EXPECT_EQ(second.name, "openb-pod-0001");
  EXPECT_EQ(second.id, 1);
  EXPECT_EQ(second.gpus, 1u);
  EXPECT_DOUBLE_EQ(second.gpu_share, 0.46);
  EXPECT_EQ(second.qos, "LS");
  EXPECT_EQ(second.submit, 427061 * kNsPerSec);
  EXPECT_EQ(second.duration, (12902960 - 427061) * kNsPerSec);
}

TEST(OpenbTrace, StatsMatchAwkAndAnIndependentParse) {
  auto t = load_trace(kOpenb + "openb_pod_list_default.csv", "openb");
  ASSERT_TRUE(t) << t.error().what();
  TraceStats s = trace_stats(*t);
  // Constants from awk over the raw CSV (see docs/sim-traces.md).
  EXPECT_EQ(s.jobs, 6203u);
  EXPECT_NEAR(s.gpu_jobs_share, 6203.0 / 8152.0, 1e-12);
  EXPECT_NEAR(s.total_gpu_hours, 51470.674158, 1e-5);
  EXPECT_NEAR(s.mean_duration_s, 30851.148960, 1e-5);
  EXPECT_DOUBLE_EQ(s.median_duration_s, 655.0);
  EXPECT_DOUBLE_EQ(s.p99_duration_s, 147608.0);
  EXPECT_NEAR(s.mean_gpus, 0.884238, 1e-6);
  EXPECT_DOUBLE_EQ(s.median_gpus, 1.0);
  EXPECT_EQ(s.max_gpus, 8u);
  EXPECT_DOUBLE_EQ(s.span_s, 12901761.0);
  EXPECT_NEAR(s.arrival_rate_per_hour, 6203.0 / (12901761.0 / 3600.0), 1e-9);
  EXPECT_NEAR(s.fractional_share, 2573.0 / 6203.0, 1e-12);
  const std::map<unsigned, std::size_t> hist{{1, 6129}, {2, 15}, {4, 15}, {8, 44}};
  EXPECT_EQ(s.size_histogram, hist);

  // A separate, simple parse: the file has no quotes, so splitting on commas is exact.
  std::size_t n = 0;
  double sum_s = 0, gpu_h = 0;
  const std::string raw = slurp(kOpenb + "openb_pod_list_default.csv");
  auto lines = split_lines(raw);
  for (std::size_t i = 1; i < lines.size(); ++i) {
    auto f = split(lines[i], ',');
    if (f.size() != 11 || *parse_i64(f[3]) == 0 || f[10].empty()) continue;
    double d = static_cast<double>(*parse_i64(f[9]) - *parse_i64(f[10]));
    ++n;
    sum_s += d;
    gpu_h += static_cast<double>(*parse_i64(f[3])) * static_cast<double>(*parse_i64(f[4])) /
             1000.0 * d / 3600.0;
  }
  EXPECT_EQ(s.jobs, n);
  EXPECT_NEAR(s.mean_duration_s, sum_s / static_cast<double>(n), 1e-6);
  EXPECT_NEAR(s.total_gpu_hours, gpu_h, 1e-6);
}

TEST(OpenbTrace, UntimedListUsesRowOrder) {
  auto t = load_trace(kOpenb + "openb_pod_list_multigpu50.csv", "auto");
  ASSERT_TRUE(t) << t.error().what();
  EXPECT_EQ(t->jobs.size(), 7973u);  // 9061 rows, 1088 of them num_gpu 0
  EXPECT_EQ(t->skipped, 1088u);
  ASSERT_EQ(t->notes.size(), 2u);
  EXPECT_EQ(t->notes[1],
            "no times in the file: data row k is submitted at k * 1 s; duration forever (pods "
            "hold their GPUs to the end)");
  for (const TraceJob& j : t->jobs) {
    ASSERT_EQ(j.submit, j.id * kNsPerSec);
    ASSERT_EQ(j.duration, kForever);
  }
  const std::map<unsigned, std::size_t> hist{{1, 6989}, {2, 222}, {4, 206}, {8, 556}};
  EXPECT_EQ(trace_stats(*t).size_histogram, hist);

  OpenbOptions opt;
  opt.untimed_interarrival = 30 * kNsPerSec;
  opt.untimed_duration = 3600 * kNsPerSec;
  auto spaced = load_trace(kOpenb + "openb_pod_list_multigpu50.csv", "openb", opt);
  ASSERT_TRUE(spaced);
  EXPECT_EQ(spaced->jobs.back().submit, 9060 * 30 * kNsPerSec);
  EXPECT_EQ(spaced->jobs.back().duration, 3600 * kNsPerSec);
  EXPECT_EQ(spaced->notes[1],
            "no times in the file: data row k is submitted at k * 30 s; duration 3600 s");
}

TEST(OpenbTrace, QuirksAreSkippedAndCounted) {
  const std::string text =
      "name,num_gpu,gpu_milli,gpu_spec,creation_time,deletion_time,scheduled_time\n"
      "a,1,1000,V100M16|V100M32,5,100,10\n"  // kept: submit 5, runs 90 s
      "b,1,500,,0,50,\n"                     // never scheduled
      "c,0,0,,0,50,0\n"                      // CPU-only
      "d,2,1000,,3,20,30\n"                  // deleted before scheduled
      "e,1,1000,,,20,10\n"                   // no creation_time
      "f,1,1000,,1,,1\n";                    // no deletion_time
  auto t = parse_openb_csv(text, "p.csv");
  ASSERT_TRUE(t) << t.error().what();
  ASSERT_EQ(t->jobs.size(), 1u);
  EXPECT_EQ(t->jobs[0].gpu_type, "V100M16|V100M32");
  EXPECT_EQ(t->jobs[0].submit, 5 * kNsPerSec);
  EXPECT_EQ(t->jobs[0].duration, 90 * kNsPerSec);
  EXPECT_EQ(t->skipped, 5u);
  const std::vector<std::string> notes{
      "1 CPU-only pods (num_gpu 0)", "1 GPU pods never scheduled (empty scheduled_time)",
      "1 GPU pods without creation_time", "1 GPU pods without deletion_time",
      "1 GPU pods deleted before they were scheduled"};
  EXPECT_EQ(t->notes, notes);
}

TEST(OpenbTrace, BadValuesAreErrors) {
  auto t = parse_openb_csv("name,num_gpu,gpu_milli\na,1,1500\n", "p.csv");
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().what(),
            "p.csv:2:3: field 'gpu_milli': expected an integer from 0 to 1000, got '1500'");
  t = parse_openb_csv("name,num_gpu,gpu_milli\na,1,0\n", "p.csv");
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().what(), "p.csv:2:3: field 'gpu_milli': a GPU pod needs 1 to 1000, got '0'");
  t = parse_openb_csv("name,num_gpu,gpu_milli,creation_time\na,1,10,0\n", "p.csv");
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().what(),
            "p.csv:1: a timed openb pod list needs all of creation_time, deletion_time and "
            "scheduled_time");
  t = parse_openb_csv("name,gpu_milli\n", "p.csv");
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().what(), "p.csv:1: missing required openb column 'num_gpu'");
}

TEST(OpenbNodes, GroupByModelAndGpus) {
  auto groups = load_openb_nodes(kOpenb + "openb_node_list_gpu_node.csv");
  ASSERT_TRUE(groups) << groups.error().what();
  unsigned nodes = 0, gpus = 0;
  for (const NodeGroup& g : *groups) {
    nodes += g.count;
    gpus += g.count * g.gpus_per_node;
  }
  EXPECT_EQ(nodes, 1213u);
  EXPECT_EQ(gpus, 6212u);
  ASSERT_EQ(groups->size(), 12u);
  EXPECT_EQ(groups->front().model, "A10");
  EXPECT_EQ(groups->front().gpus_per_node, 1u);
  EXPECT_EQ(groups->front().count, 2u);
  EXPECT_EQ((*groups)[1].model, "G2");
  EXPECT_EQ((*groups)[1].gpus_per_node, 8u);
  EXPECT_EQ((*groups)[1].count, 549u);
}

TEST(GenericTrace, ParsesColumnsInAnyOrder) {
  auto t = parse_generic_csv(
      "duration,gpus,job_id,submit_time,user,priority,time_limit,gpu_type\n"
      "60,4,7,10.5,alice,2,120,A100\n"
      "1.25,1,3,10.5,,,,\n"
      "5,0,9,0,bob,0,0,\n",
      "t.csv");
  ASSERT_TRUE(t) << t.error().what();
  ASSERT_EQ(t->jobs.size(), 2u);
  EXPECT_EQ(t->skipped, 1u);
  EXPECT_EQ(t->notes, std::vector<std::string>{"1 rows with gpus = 0 (CPU-only jobs)"});
  const TraceJob& a = t->jobs[0];  // same submit as job 7: the lower id first
  EXPECT_EQ(a.id, 3);
  EXPECT_EQ(a.submit, 10'500'000'000);
  EXPECT_EQ(a.duration, 1'250'000'000);
  EXPECT_EQ(a.priority, 0);
  EXPECT_EQ(a.time_limit, 0);
  const TraceJob& b = t->jobs[1];
  EXPECT_EQ(b.id, 7);
  EXPECT_EQ(b.name, "7");
  EXPECT_EQ(b.gpus, 4u);
  EXPECT_DOUBLE_EQ(b.gpu_share, 1.0);
  EXPECT_EQ(b.user, "alice");
  EXPECT_EQ(b.priority, 2);
  EXPECT_EQ(b.time_limit, 120 * kNsPerSec);
  EXPECT_EQ(b.gpu_type, "A100");
}

TEST(GenericTrace, AcceptsQuotesCrlfBomAndBlankLines) {
  auto t = parse_generic_csv(
      "\xEF\xBB\xBFjob_id,submit_time,gpus,duration,user,gpu_type\r\n"
      "1,0,2,10,\"smith, j\",\"A100|H100\"\r\n"
      "2,1,1,10,\"say \"\"hi\"\"\",\"multi\nline\"\r\n"
      "\r\n"
      "3, 2 ,1,10,  carol  ,\r\n"
      "\r\n\n",
      "t.csv");
  ASSERT_TRUE(t) << t.error().what();
  ASSERT_EQ(t->jobs.size(), 3u);
  EXPECT_EQ(t->jobs[0].user, "smith, j");
  EXPECT_EQ(t->jobs[0].gpu_type, "A100|H100");
  EXPECT_EQ(t->jobs[1].user, "say \"hi\"");
  EXPECT_EQ(t->jobs[1].gpu_type, "multi\nline");
  EXPECT_EQ(t->jobs[2].submit, 2 * kNsPerSec);
  EXPECT_EQ(t->jobs[2].user, "carol");
}

TEST(GenericTrace, ErrorsNameFileLineFieldAndColumn) {
  const std::string h = "job_id,submit_time,gpus,duration\n";
  EXPECT_EQ(generic_error(h + "1,0,1,5\n2,0,x,5\n"),
            "t.csv:3:3: field 'gpus': expected a non-negative integer, got 'x'");
  EXPECT_EQ(generic_error(h + "1,0,-2,5\n"),
            "t.csv:2:3: field 'gpus': expected a non-negative integer, got '-2'");
  EXPECT_EQ(generic_error(h + "1,0,1,-5\n"),
            "t.csv:2:4: field 'duration': expected a non-negative number of seconds, got '-5'");
  EXPECT_EQ(generic_error(h + "1,0,1,nan\n"),
            "t.csv:2:4: field 'duration': expected a non-negative number of seconds, got 'nan'");
  EXPECT_EQ(generic_error(h + "1,,1,5\n"), "t.csv:2:2: field 'submit_time': missing value");
  EXPECT_EQ(generic_error(h + "1,0,1\n"),
            "t.csv:2:4: field 'duration': missing (the row has 3 fields, the header 4)");
  EXPECT_EQ(generic_error(h + "1,0,1,5,9\n"),
            "t.csv:2:5: extra field (the row has 5 fields, the header 4)");
  EXPECT_EQ(generic_error(h + "1,0,1,5\n\n1,2,1,5\n"),
            "t.csv:4:1: field 'job_id': duplicate job id '1' (first on line 2)");
  EXPECT_EQ(generic_error(h + "7,0,1,5\n007,2,1,5\n"),
            "t.csv:3:1: field 'job_id': duplicate job id '007' (first on line 2)");
  EXPECT_EQ(generic_error(h + "j1,0,1,5\nj1,2,1,5\n"),
            "t.csv:3:1: field 'job_id': duplicate job id 'j1' (first on line 2)");
  EXPECT_EQ(generic_error(h + ",0,1,5\n"), "t.csv:2:1: field 'job_id': missing value");
  EXPECT_EQ(generic_error("job_id,submit_time,gpus,duration,priority\n1,0,1,5,high\n"),
            "t.csv:2:5: field 'priority': expected an integer, got 'high'");
  EXPECT_EQ(generic_error("job_id,submit_time,gpus,duration,foo\n"),
            "t.csv:1:5: unknown column 'foo' (known: job_id, submit_time, gpus, duration, user, "
            "priority, time_limit, gpu_type)");
  EXPECT_EQ(generic_error("job_id,submit_time,gpus\n1,0,1\n"),
            "t.csv:1: missing required column 'duration'");
  EXPECT_EQ(generic_error("job_id,gpus,gpus,submit_time,duration\n"),
            "t.csv:1:3: duplicate column 'gpus'");
  EXPECT_EQ(generic_error(""), "t.csv: empty file: no header line");
  EXPECT_EQ(generic_error("\n\n"), "t.csv: empty file: no header line");
}

// Real traces name their jobs ("application_1700000000_0042" in YARN logs, "j17"): the id is
// text, kept as written, and equal submit times keep the file's order.
TEST(GenericTrace, TextJobIdsAreKeptAsWritten) {
  auto t = parse_generic_csv(
      "job_id,submit_time,gpus,duration\n"
      "application_1700000000_0042,5,8,60\n"
      "j17,0,1,30\n"
      "\"a,b\",5,2,10\n"
      "99,5,1,10\n",
      "t.csv");
  ASSERT_TRUE(t) << t.error().what();
  ASSERT_EQ(t->jobs.size(), 4u);
  EXPECT_EQ(t->jobs[0].name, "j17");
  EXPECT_EQ(t->jobs[1].name, "application_1700000000_0042");
  EXPECT_EQ(t->jobs[2].name, "a,b");
  EXPECT_EQ(t->jobs[3].name, "99");
  // Numbered by position, so the ids stay distinct and ordered like the file.
  EXPECT_LT(t->jobs[1].id, t->jobs[2].id);
  EXPECT_LT(t->jobs[2].id, t->jobs[3].id);
  // All numeric: the numbers themselves order equal submit times, as before.
  auto n = parse_generic_csv("job_id,submit_time,gpus,duration\n9,0,1,5\n3,0,1,5\n", "t.csv");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->jobs[0].id, 3);
  EXPECT_EQ(n->jobs[1].name, "9");
}

TEST(GenericTrace, QuotingErrors) {
  const std::string h = "job_id,submit_time,gpus,duration,user\n";
  EXPECT_EQ(generic_error(h + "1,0,1,5,\"open\n2,0,1,5,x\n"),
            "t.csv:2:5: unterminated quoted field");
  EXPECT_EQ(generic_error(h + "1,0,1,5,\"a\"b\n"),
            "t.csv:2:5: unexpected text after a closing quote");
  EXPECT_EQ(generic_error(h + "1,0,1,5,a\"b\"\n"), "t.csv:2:5: quote inside an unquoted field");
  // A record spanning lines: a later error still names its own line.
  EXPECT_EQ(generic_error(h + "1,0,1,5,\"two\nlines\"\n2,0,q,5,x\n"),
            "t.csv:4:3: field 'gpus': expected a non-negative integer, got 'q'");
}

TEST(LoadTrace, FormatsAndFileErrors) {
  auto missing = load_trace("/nonexistent/trace.csv", "auto");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  auto bad_format = load_trace(kOpenb + "openb_pod_list_default.csv", "swf");
  ASSERT_FALSE(bad_format);
  EXPECT_EQ(bad_format.error().what(),
            "unknown trace format 'swf' (expected auto, generic or openb)");
  auto nodes_as_trace = load_trace(kOpenb + "openb_node_list_gpu_node.csv", "auto");
  ASSERT_FALSE(nodes_as_trace);
  EXPECT_EQ(nodes_as_trace.error().what(),
            kOpenb +
                "openb_node_list_gpu_node.csv: cannot tell the trace format from the header "
                "'sn,cpu_milli,memory_mib,gpu,model' (generic has job_id, openb has name and "
                "num_gpu)");
  auto forced = load_trace(kOpenb + "openb_pod_list_default.csv", "generic");
  ASSERT_FALSE(forced);
  EXPECT_EQ(forced.error().what(), kOpenb +
                                       "openb_pod_list_default.csv:1:1: unknown column 'name' "
                                       "(known: job_id, submit_time, gpus, duration, user, "
                                       "priority, time_limit, gpu_type)");
}

TEST(TraceStats, SmallTraceByHand) {
  Trace t;
  t.skipped = 2;
  auto job = [](std::int64_t id, double submit_s, unsigned gpus, double share, double dur_s) {
    TraceJob j;
    j.id = id;
    j.submit = static_cast<TimeNs>(submit_s * 1e9);
    j.gpus = gpus;
    j.gpu_share = share;
    j.duration = static_cast<DurationNs>(dur_s * 1e9);
    return j;
  };
  t.jobs = {job(0, 0, 1, 0.5, 10), job(1, 1800, 2, 1, 20), job(2, 3600, 8, 1, 30),
            job(3, 7200, 1, 1, 3600)};
  TraceStats s = trace_stats(t);
  EXPECT_EQ(s.jobs, 4u);
  EXPECT_DOUBLE_EQ(s.gpu_jobs_share, 4.0 / 6.0);
  EXPECT_DOUBLE_EQ(s.mean_gpus, (0.5 + 2 + 8 + 1) / 4);
  EXPECT_DOUBLE_EQ(s.median_gpus, 1.5);  // (1 + 2) / 2
  EXPECT_EQ(s.max_gpus, 8u);
  EXPECT_DOUBLE_EQ(s.median_duration_s, 25);
  EXPECT_DOUBLE_EQ(s.p99_duration_s, 3600);
  EXPECT_DOUBLE_EQ(s.span_s, 7200);
  EXPECT_DOUBLE_EQ(s.arrival_rate_per_hour, 2);
  EXPECT_DOUBLE_EQ(s.total_gpu_hours, (0.5 * 10 + 2 * 20 + 8 * 30 + 3600) / 3600.0);
  EXPECT_DOUBLE_EQ(s.fractional_share, 0.25);
  EXPECT_EQ(trace_stats(Trace{}).jobs, 0u);
  EXPECT_DOUBLE_EQ(trace_stats(Trace{}).arrival_rate_per_hour, 0);
}

}  // namespace
}  // namespace cardiac::sim
