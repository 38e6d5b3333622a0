// SPDX-License-Identifier: Apache-2.0
#include "serving/engines.h"

#include <gtest/gtest.h>

namespace cardiac::serving {
namespace {

TEST(Engines, RecognisedByCommandLineWithTheirMemoryFraction) {
  auto v = recognise_engine("python3",
                            "python3 -m vllm.entrypoints.openai.api_server --model m "
                            "--gpu-memory-utilization 0.92");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->engine, "vLLM");
  EXPECT_DOUBLE_EQ(*v->memory_fraction, 0.92);
  v = recognise_engine("vllm", "/usr/bin/python3 /usr/local/bin/vllm serve m");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->engine, "vLLM");
  EXPECT_FALSE(v->memory_fraction);
  v = recognise_engine("VLLM::EngineCor", "");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->engine, "vLLM");
  v = recognise_engine("python", "python -m sglang.launch_server --mem-fraction-static=0.85");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->engine, "SGLang");
  EXPECT_DOUBLE_EQ(*v->memory_fraction, 0.85);
  v = recognise_engine("trtllm-serve", "trtllm-serve m --kv_cache_free_gpu_memory_fraction 0.9");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->engine, "TensorRT-LLM");
  EXPECT_DOUBLE_EQ(*v->memory_fraction, 0.9);
  EXPECT_EQ(recognise_engine("text-generation", "text-generation-launcher --model-id m")->engine,
            "TGI");
}

TEST(Engines, PlainTrainingIsNotAnEngine) {
  EXPECT_FALSE(recognise_engine("python3", "python3 train.py --lr 3e-4"));
  EXPECT_FALSE(recognise_engine("python3", ""));
  // A fraction out of range is ignored, the engine still recognised.
  auto v = recognise_engine("python3", "vllm serve m --gpu-memory-utilization 7");
  ASSERT_TRUE(v);
  EXPECT_FALSE(v->memory_fraction);
}

TEST(Engines, FlatAndHigh) {
  const double total = 80e9;
  EXPECT_TRUE(flat_and_high({{0, 72e9}, {1, 72.5e9}, {2, 72.4e9}}, total));
  EXPECT_FALSE(flat_and_high({{0, 60e9}, {1, 66e9}, {2, 72e9}}, total));  // grows
  EXPECT_FALSE(flat_and_high({{0, 10e9}, {1, 10e9}}, total));             // low
  EXPECT_FALSE(flat_and_high({}, total));
}

TEST(Engines, CmdlineText) {
  using namespace std::string_literals;
  EXPECT_EQ(cmdline_text("vllm\0serve\0m\0"s), "vllm serve m");
  EXPECT_EQ(cmdline_text("abcdef", 3), "abc");
}

}  // namespace
}  // namespace cardiac::serving
