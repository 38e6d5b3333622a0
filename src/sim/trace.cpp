// SPDX-License-Identifier: Apache-2.0
// Trace parsers (generic CSV, Alibaba openb pods and nodes), the file loader and trace stats.
#include "sim/trace.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <fstream>
#include <iterator>
#include <optional>
#include <unordered_map>
#include <utility>

#include "core/format.h"
#include "core/strings.h"

namespace cardiac::sim {
namespace {

// One CSV record: the line it starts on and its fields, unquoted.
struct Record {
  std::size_t line = 0;
  std::vector<std::string> fields;
};

bool is_blank(char c) {
  return c == ' ' || c == '\t';
}

std::string_view strip_bom(std::string_view text) {
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  return text;
}

// An RFC 4180 reader. Quoted fields may hold commas, doubled quotes and newlines; spaces around
// an unquoted field are dropped; a record that is only blanks is skipped, so trailing blank
// lines are harmless. Lines end in LF or CRLF.
class CsvReader {
 public:
  CsvReader(std::string_view text, std::string_view file) : text_(strip_bom(text)), file_(file) {}

  // Fills `rec` with the next non-blank record; false at the end of the input.
  Result<bool> next(Record& rec) {
    while (pos_ < text_.size()) {
      CARDIAC_TRY(read_record(rec));
      bool blank = rec.fields.size() == 1 && rec.fields[0].empty() && !last_quoted_;
      if (!blank) return true;
    }
    return false;
  }

 private:
  Error error(std::size_t line, std::size_t field, std::string message) const {
    return Error::parse(std::move(message), fmt::format("{}:{}:{}", file_, line, field));
  }

  Status read_record(Record& rec) {
    rec.line = line_;
    rec.fields.clear();
    std::string cur;
    bool in_quotes = false, closed = false;
    last_quoted_ = false;
    auto push = [&] {
      if (!last_quoted_) cur = std::string(trim(cur));
      rec.fields.push_back(std::move(cur));
      cur.clear();
    };
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (in_quotes) {
        if (c == '"' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '"') {
          cur += '"';
          pos_ += 2;
          continue;
        }
        if (c == '"') {
          in_quotes = false;
          closed = true;
        } else {
          if (c == '\n') ++line_;
          cur += c;
        }
        ++pos_;
        continue;
      }
      if (c == ',') {
        push();
        closed = last_quoted_ = false;
        ++pos_;
        continue;
      }
      if (c == '\r' && (pos_ + 1 == text_.size() || text_[pos_ + 1] == '\n')) {
        ++pos_;
        continue;
      }
      if (c == '\n') {
        ++pos_;
        ++line_;
        push();
        return {};
      }
      if (closed && !is_blank(c)) {
        return fail(error(line_, rec.fields.size() + 1, "unexpected text after a closing quote"));
      }
      if (c == '"') {
        if (!trim(cur).empty()) {
          return fail(error(line_, rec.fields.size() + 1, "quote inside an unquoted field"));
        }
        cur.clear();
        in_quotes = last_quoted_ = true;
      } else if (!closed) {
        cur += c;
      }
      ++pos_;
    }
    if (in_quotes) return fail(error(rec.line, rec.fields.size() + 1, "unterminated quoted field"));
    push();
    return {};
  }

  std::string_view text_;
  std::string_view file_;
  std::size_t pos_ = 0;
  std::size_t line_ = 1;
  bool last_quoted_ = false;
};

constexpr std::size_t kNone = static_cast<std::size_t>(-1);

// Column positions by lower-cased name; kNone when absent.
struct Header {
  std::vector<std::string> names;
  std::size_t find(std::string_view name) const {
    auto it = std::find(names.begin(), names.end(), name);
    return it == names.end() ? kNone : static_cast<std::size_t>(it - names.begin());
  }
};

Result<Header> read_header(CsvReader& reader, std::string_view file) {
  Record rec;
  auto more = reader.next(rec);
  if (!more) return fail(more.error());
  if (!*more) return fail(Error::parse("empty file: no header line", std::string(file)));
  Header h;
  for (std::size_t i = 0; i < rec.fields.size(); ++i) {
    std::string name = to_lower(trim(rec.fields[i]));
    if (h.find(name) != kNone) {
      return fail(Error::parse(fmt::format("duplicate column '{}'", name),
                               fmt::format("{}:{}:{}", file, rec.line, i + 1)));
    }
    h.names.push_back(std::move(name));
  }
  return h;
}

// A data row with its header, for field lookups and errors that say where they are.
struct Row {
  std::string_view file;
  const Header& header;
  const Record& rec;

  Error error(std::size_t col, std::string message) const {
    return Error::parse(fmt::format("field '{}': {}", header.names[col], std::move(message)),
                        fmt::format("{}:{}:{}", file, rec.line, col + 1));
  }
  std::string_view text(std::size_t col) const {
    return col == kNone ? std::string_view{} : std::string_view(rec.fields[col]);
  }
  Status check_width() const {
    std::size_t have = rec.fields.size(), want = header.names.size();
    if (have < want) {
      return fail(
          error(have, fmt::format("missing (the row has {} fields, the header {})", have, want)));
    }
    if (have > want) {
      return fail(Error::parse(
          fmt::format("extra field (the row has {} fields, the header {})", have, want),
          fmt::format("{}:{}:{}", file, rec.line, want + 1)));
    }
    return {};
  }
  Result<std::int64_t> integer(std::size_t col, std::int64_t min, std::int64_t max) const {
    std::string_view s = text(col);
    if (s.empty()) return fail(error(col, "missing value"));
    auto v = parse_i64(s);
    if (!v || *v < min || *v > max) {
      // A sign error reads best as "non-negative"; only a value past the top needs the range.
      std::string want = min == 0 ? "a non-negative integer" : "an integer";
      if (v && *v > max) want = fmt::format("an integer from {} to {}", min, max);
      return fail(error(col, fmt::format("expected {}, got '{}'", want, s)));
    }
    return *v;
  }
  // Seconds, decimals allowed, to nanoseconds; nullopt for an empty field.
  Result<std::optional<DurationNs>> seconds(std::size_t col) const {
    std::string_view s = text(col);
    if (s.empty()) return std::optional<DurationNs>{};
    auto v = parse_double(s);
    // 9.2e9 s is the most that fits in int64 nanoseconds; the negation also rejects NaN.
    if (!v || !(*v >= 0 && *v <= 9.2e9)) {
      return fail(
          error(col, fmt::format("expected a non-negative number of seconds, got '{}'", s)));
    }
    return std::optional<DurationNs>(std::llround(*v * 1e9));
  }
  Result<DurationNs> required_seconds(std::size_t col) const {
    auto v = seconds(col);
    if (!v) return fail(v.error());
    if (!*v) return fail(error(col, "missing value"));
    return **v;
  }
};

// Calls `each` with every data record, width-checked, until the end or the first error.
template <class F>
Status for_each_row(CsvReader& reader, const Header& header, std::string_view file, F&& each) {
  Record rec;
  while (true) {
    auto more = reader.next(rec);
    if (!more) return fail(more.error());
    if (!*more) return {};
    Row row{file, header, rec};
    CARDIAC_TRY(row.check_width());
    CARDIAC_TRY(each(row));
  }
}

void sort_jobs(std::vector<TraceJob>& jobs) {
  std::sort(jobs.begin(), jobs.end(), [](const TraceJob& a, const TraceJob& b) {
    return a.submit != b.submit ? a.submit < b.submit : a.id < b.id;
  });
}

// Adds "N <what>" to the notes when N > 0.
void note(Trace& t, std::size_t n, std::string_view what) {
  if (n == 0) return;
  t.skipped += n;
  t.notes.push_back(fmt::format("{} {}", n, what));
}

constexpr std::int64_t kMaxGpus = 1 << 20;

}  // namespace

Result<Trace> parse_generic_csv(std::string_view text, std::string_view file) {
  CsvReader reader(text, file);
  auto header = read_header(reader, file);
  if (!header) return fail(header.error());
  static constexpr std::string_view kKnown[] = {"job_id", "submit_time", "gpus",       "duration",
                                                "user",   "priority",    "time_limit", "gpu_type"};
  for (std::size_t i = 0; i < header->names.size(); ++i) {
    if (std::find(std::begin(kKnown), std::end(kKnown), header->names[i]) == std::end(kKnown)) {
      return fail(Error::parse(
          fmt::format("unknown column '{}' (known: {})", header->names[i], fmt::join(kKnown, ", ")),
          fmt::format("{}:1:{}", file, i + 1)));
    }
  }
  for (std::string_view need : {"job_id", "submit_time", "gpus", "duration"}) {
    if (header->find(need) == kNone) {
      return fail(Error::parse(fmt::format("missing required column '{}'", need),
                               fmt::format("{}:1", file)));
    }
  }
  const std::size_t c_id = header->find("job_id"), c_submit = header->find("submit_time"),
                    c_gpus = header->find("gpus"), c_dur = header->find("duration"),
                    c_user = header->find("user"), c_prio = header->find("priority"),
                    c_limit = header->find("time_limit"), c_type = header->find("gpu_type");

  Trace trace;
  trace.source = std::string(file);
  // Job ids are text ("application_1700000000_0042", "j17"); whole numbers compare as numbers,
  // so "007" and "7" are the same job.
  std::unordered_map<std::string, std::size_t> first_line;
  std::size_t cpu_only = 0;
  bool all_numeric = true;
  CARDIAC_TRY(for_each_row(reader, *header, file, [&](const Row& row) -> Status {
    const std::string_view id_text = row.text(c_id);
    if (id_text.empty()) return fail(row.error(c_id, "missing value"));
    const auto number = parse_i64(id_text);
    const bool numeric = number && *number >= 0;
    all_numeric = all_numeric && numeric;
    const std::string key = numeric ? std::to_string(*number) : std::string(id_text);
    auto [it, fresh] = first_line.emplace(key, row.rec.line);
    if (!fresh) {
      return fail(row.error(
          c_id, fmt::format("duplicate job id '{}' (first on line {})", id_text, it->second)));
    }
    auto submit = row.required_seconds(c_submit);
    if (!submit) return fail(submit.error());
    auto gpus = row.integer(c_gpus, 0, kMaxGpus);
    if (!gpus) return fail(gpus.error());
    auto duration = row.required_seconds(c_dur);
    if (!duration) return fail(duration.error());
    TraceJob job;
    if (c_prio != kNone && !row.text(c_prio).empty()) {
      auto prio = row.integer(c_prio, INT_MIN, INT_MAX);
      if (!prio) return fail(prio.error());
      job.priority = static_cast<int>(*prio);
    }
    if (c_limit != kNone) {
      auto limit = row.seconds(c_limit);
      if (!limit) return fail(limit.error());
      job.time_limit = limit->value_or(0);
    }
    if (*gpus == 0) {
      ++cpu_only;
      return {};
    }
    job.id = numeric ? *number : 0;  // text ids are numbered below
    job.name = std::string(id_text);
    job.submit = *submit;
    job.gpus = static_cast<unsigned>(*gpus);
    job.duration = *duration;
    job.user = std::string(row.text(c_user));
    job.gpu_type = std::string(row.text(c_type));
    trace.jobs.push_back(std::move(job));
    return {};
  }));
  note(trace, cpu_only, "rows with gpus = 0 (CPU-only jobs)");
  // With any text id, jobs are numbered in file order: equal submit times then keep the file's
  // order, and numbers and positions never mix as keys.
  if (!all_numeric) {
    for (std::size_t i = 0; i < trace.jobs.size(); ++i)
      trace.jobs[i].id = static_cast<std::int64_t>(i);
  }
  sort_jobs(trace.jobs);
  return trace;
}

Result<Trace> parse_openb_csv(std::string_view text, std::string_view file,
                              const OpenbOptions& options) {
  CsvReader reader(text, file);
  auto header = read_header(reader, file);
  if (!header) return fail(header.error());
  for (std::string_view need : {"name", "num_gpu", "gpu_milli"}) {
    if (header->find(need) == kNone) {
      return fail(Error::parse(fmt::format("missing required openb column '{}'", need),
                               fmt::format("{}:1", file)));
    }
  }
  const std::size_t c_name = header->find("name"), c_gpus = header->find("num_gpu"),
                    c_milli = header->find("gpu_milli"), c_spec = header->find("gpu_spec"),
                    c_qos = header->find("qos"), c_create = header->find("creation_time"),
                    c_delete = header->find("deletion_time"),
                    c_sched = header->find("scheduled_time");
  const int time_columns = (c_create != kNone) + (c_delete != kNone) + (c_sched != kNone);
  if (time_columns != 0 && time_columns != 3) {
    return fail(Error::parse(
        "a timed openb pod list needs all of creation_time, deletion_time and scheduled_time",
        fmt::format("{}:1", file)));
  }
  const bool timed = time_columns == 3;
  if (!timed && (options.untimed_interarrival < 0 || options.untimed_duration < 0)) {
    return fail(Error::invalid("untimed openb inter-arrival and duration must be >= 0"));
  }

  Trace trace;
  trace.source = std::string(file);
  std::size_t cpu_only = 0, never_scheduled = 0, no_creation = 0, no_deletion = 0, reversed = 0;
  std::int64_t row_index = -1;
  CARDIAC_TRY(for_each_row(reader, *header, file, [&](const Row& row) -> Status {
    ++row_index;
    auto gpus = row.integer(c_gpus, 0, kMaxGpus);
    if (!gpus) return fail(gpus.error());
    auto milli = row.integer(c_milli, 0, 1000);
    if (!milli) return fail(milli.error());
    TraceJob job;
    job.id = row_index;
    job.name = std::string(row.text(c_name));
    job.gpu_type = std::string(row.text(c_spec));
    job.qos = std::string(row.text(c_qos));
    if (timed) {
      auto create = row.seconds(c_create);
      if (!create) return fail(create.error());
      auto del = row.seconds(c_delete);
      if (!del) return fail(del.error());
      auto sched = row.seconds(c_sched);
      if (!sched) return fail(sched.error());
      if (*gpus == 0) {
        ++cpu_only;
        return {};
      }
      if (!*sched) {
        ++never_scheduled;
        return {};
      }
      if (!*create) {
        ++no_creation;
        return {};
      }
      if (!*del) {
        ++no_deletion;
        return {};
      }
      if (**del < **sched) {
        ++reversed;
        return {};
      }
      job.submit = **create;
      job.duration = **del - **sched;
    } else {
      if (*gpus == 0) {
        ++cpu_only;
        return {};
      }
      job.submit = row_index * options.untimed_interarrival;
      job.duration = options.untimed_duration;
    }
    if (*milli == 0) return fail(row.error(c_milli, "a GPU pod needs 1 to 1000, got '0'"));
    job.gpus = static_cast<unsigned>(*gpus);
    job.gpu_share = static_cast<double>(*milli) / 1000.0;
    trace.jobs.push_back(std::move(job));
    return {};
  }));
  note(trace, cpu_only, "CPU-only pods (num_gpu 0)");
  note(trace, never_scheduled, "GPU pods never scheduled (empty scheduled_time)");
  note(trace, no_creation, "GPU pods without creation_time");
  note(trace, no_deletion, "GPU pods without deletion_time");
  note(trace, reversed, "GPU pods deleted before they were scheduled");
  if (!timed) {
    trace.notes.push_back(fmt::format(
        "no times in the file: data row k is submitted at k * {} s; duration {}",
        static_cast<double>(options.untimed_interarrival) / 1e9,
        options.untimed_duration == kForever
            ? std::string("forever (pods hold their GPUs to the end)")
            : fmt::format("{} s", static_cast<double>(options.untimed_duration) / 1e9)));
  }
  sort_jobs(trace.jobs);
  return trace;
}

namespace {

Result<std::string> read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(Error::io(path, errno));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return fail(Error::io(path, errno ? errno : EIO));
  return text;
}

}  // namespace

Result<Trace> load_trace(const std::string& path, std::string_view format,
                         const OpenbOptions& options) {
  if (format != "auto" && format != "generic" && format != "openb") {
    return fail(Error::invalid(
        fmt::format("unknown trace format '{}' (expected auto, generic or openb)", format)));
  }
  auto text = read_text(path);
  if (!text) return fail(text.error());
  if (format == "auto") {
    std::string_view body = strip_bom(*text);
    std::string first = to_lower(body.substr(0, body.find('\n')));
    std::vector<std::string> cols;
    for (auto c : split(first, ',')) {
      c = trim(c);
      if (c.size() >= 2 && c.front() == '"' && c.back() == '"') c = c.substr(1, c.size() - 2);
      cols.emplace_back(c);
    }
    auto has = [&](std::string_view c) {
      return std::find(cols.begin(), cols.end(), c) != cols.end();
    };
    if (has("job_id")) {
      format = "generic";
    } else if (has("name") && has("num_gpu")) {
      format = "openb";
    } else {
      return fail(Error::parse(
          fmt::format("cannot tell the trace format from the header '{}' (generic has job_id, "
                      "openb has name and num_gpu)",
                      trim(body.substr(0, std::min(body.find('\n'), std::size_t{120})))),
          path));
    }
  }
  return format == "generic" ? parse_generic_csv(*text, path)
                             : parse_openb_csv(*text, path, options);
}

Result<std::vector<NodeGroup>> parse_openb_nodes(std::string_view text, std::string_view file) {
  CsvReader reader(text, file);
  auto header = read_header(reader, file);
  if (!header) return fail(header.error());
  for (std::string_view need : {"sn", "gpu", "model"}) {
    if (header->find(need) == kNone) {
      return fail(Error::parse(fmt::format("missing required openb node column '{}'", need),
                               fmt::format("{}:1", file)));
    }
  }
  const std::size_t c_gpu = header->find("gpu"), c_model = header->find("model");
  std::map<std::pair<std::string, unsigned>, unsigned> groups;
  CARDIAC_TRY(for_each_row(reader, *header, file, [&](const Row& row) -> Status {
    auto gpus = row.integer(c_gpu, 0, kMaxGpus);
    if (!gpus) return fail(gpus.error());
    if (row.text(c_model).empty()) return fail(row.error(c_model, "missing value"));
    ++groups[{std::string(row.text(c_model)), static_cast<unsigned>(*gpus)}];
    return {};
  }));
  std::vector<NodeGroup> out;
  for (const auto& [key, count] : groups) out.push_back({key.first, key.second, count});
  return out;
}

Result<std::vector<NodeGroup>> load_openb_nodes(const std::string& path) {
  auto text = read_text(path);
  if (!text) return fail(text.error());
  return parse_openb_nodes(*text, path);
}

namespace {

// Median of a sorted vector: the middle value, or the mean of the two middle values.
double median_sorted(const std::vector<double>& v) {
  if (v.empty()) return 0;
  std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

TraceStats trace_stats(const Trace& trace) {
  TraceStats s;
  s.jobs = trace.jobs.size();
  s.skipped = trace.skipped;
  if (s.jobs + s.skipped > 0) {
    s.gpu_jobs_share = static_cast<double>(s.jobs) / static_cast<double>(s.jobs + s.skipped);
  }
  if (trace.jobs.empty()) return s;
  std::vector<double> demand, duration;
  demand.reserve(s.jobs);
  duration.reserve(s.jobs);
  double sum_demand = 0, sum_duration = 0, gpu_seconds = 0;
  std::size_t fractional = 0;
  TimeNs first = trace.jobs.front().submit, last = first;
  for (const TraceJob& j : trace.jobs) {
    double d = static_cast<double>(j.gpus) * j.gpu_share;
    double secs = static_cast<double>(j.duration) / 1e9;
    demand.push_back(d);
    duration.push_back(secs);
    sum_demand += d;
    sum_duration += secs;
    gpu_seconds += d * secs;
    s.max_gpus = std::max(s.max_gpus, j.gpus);
    ++s.size_histogram[j.gpus];
    if (j.gpu_share < 1.0) ++fractional;
    first = std::min(first, j.submit);
    last = std::max(last, j.submit);
  }
  std::sort(demand.begin(), demand.end());
  std::sort(duration.begin(), duration.end());
  const auto n = static_cast<double>(s.jobs);
  s.mean_gpus = sum_demand / n;
  s.median_gpus = median_sorted(demand);
  s.mean_duration_s = sum_duration / n;
  s.median_duration_s = median_sorted(duration);
  const std::size_t rank = (99 * s.jobs + 99) / 100;  // ceil(0.99 n) without rounding doubts
  s.p99_duration_s = duration[rank - 1];
  s.span_s = static_cast<double>(last - first) / 1e9;
  if (s.span_s > 0) s.arrival_rate_per_hour = n / (s.span_s / 3600.0);
  s.total_gpu_hours = gpu_seconds / 3600.0;
  s.fractional_share = static_cast<double>(fractional) / n;
  return s;
}

}  // namespace cardiac::sim
