#include <gtest/gtest.h>

#include <sstream>

#include "sim/trace_recorder.h"

namespace moehub {
namespace {

TEST(TraceRecorder, WritesChromeTraceJsonWithPicosecondTimestamps) {
  TraceRecorder t;
  t.name_process(0, "GPU 0");
  const int stream = t.track(0, "stream 0");
  EXPECT_EQ(t.track(0, "stream 0"), stream);
  EXPECT_NE(t.track(0, "SM group comm"), stream);
  t.span(0, stream, "gemm1", "kernel", Time::from_ps(1500), Time::from_ps(2001500), {{"tiles", "64"}});
  t.instant(0, stream, "host_sync", "sync", Time::from_ns(3));
  t.counter(0, "hbm_GBps", Time::from_ns(4), 2.5);
  std::ostringstream out;
  t.write(out);
  const std::string s = out.str();
  EXPECT_NE(s.find(R"("name":"gemm1","cat":"kernel","pid":0,"tid":1,"ts":0.001500,"dur":2.000000)"), std::string::npos) << s;
  EXPECT_NE(s.find(R"("args":{"tiles":"64"})"), std::string::npos);
  EXPECT_NE(s.find(R"("process_name","pid":0,"tid":0,"args":{"name":"GPU 0"})"), std::string::npos);
  EXPECT_NE(s.find(R"("thread_name","pid":0,"tid":2,"args":{"name":"SM group comm"})"), std::string::npos);
  EXPECT_EQ(t.size(), 3u);
}

}  // namespace
}  // namespace moehub
