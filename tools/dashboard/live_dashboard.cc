#include "tools/dashboard/live_dashboard.h"

#include <sys/resource.h>
#include <time.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include <CLI/CLI.hpp>

#include "base/atomic_file.h"
#include "base/csv.h"
#include "process/stop_signals.h"
#include "tools/cli/cli_exit.h"

namespace meshlearn::dashboard {

// The page's files, embedded at build time (tools/dashboard/CMakeLists.txt): the bytes of
// `name`, or an empty view.
std::string_view DashboardFile(std::string_view name);

namespace {

using SteadyClock = std::chrono::steady_clock;

double ThreadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

double Seconds(const timeval& t) {
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6;
}

// CPU seconds of this process and of the children it has waited for.
double RunCpuSeconds() {
  rusage self{}, children{};
  getrusage(RUSAGE_SELF, &self);
  getrusage(RUSAGE_CHILDREN, &children);
  return Seconds(self.ru_utime) + Seconds(self.ru_stime) + Seconds(children.ru_utime) +
         Seconds(children.ru_stime);
}

std::string ContentTypeOf(const std::string& name) {
  if (name.ends_with(".html")) return "text/html; charset=utf-8";
  if (name.ends_with(".js")) return "text/javascript; charset=utf-8";
  if (name.ends_with(".css")) return "text/css; charset=utf-8";
  return "application/octet-stream";
}

}  // namespace

double DashboardCost::cpu_share() const {
  return run_cpu_s > 0 ? (polling_cpu_s + serving_cpu_s + nodes_http_cpu_s) / run_cpu_s : 0;
}

LiveDashboard::LiveDashboard(RunInfo info) : model_(std::move(info)) {}

Result<std::unique_ptr<LiveDashboard>> LiveDashboard::Start(const std::string& bind_address,
                                                            uint16_t port, RunInfo info) {
  std::unique_ptr<LiveDashboard> board(new LiveDashboard(std::move(info)));
  DashboardModel* model = &board->model_;
  auto file = [](std::string name) {
    return [name](const node::HttpRequest&) {
      return node::HttpResponse{200, ContentTypeOf(name), std::string(DashboardFile(name))};
    };
  };
  auto param = [](const node::HttpRequest& request, const std::string& key) {
    auto it = request.params.find(key);
    return it == request.params.end() ? std::string() : it->second;
  };
  std::map<std::string, node::HttpRoute> routes = {
      {"/", file("index.html")},
      {"/dashboard.js", file("dashboard.js")},
      {"/dashboard.css", file("dashboard.css")},
      {"/uPlot.iife.min.js", file("uPlot.iife.min.js")},
      {"/uPlot.min.css", file("uPlot.min.css")},
      {"/api/state",
       [model, param](const node::HttpRequest& request) {
         return node::HttpResponse{200, "application/json",
                                   model->StateJson(param(request, "method"))};
       }},
      {"/api/node", [model, param](const node::HttpRequest& request) {
         auto json = model->NodeJson(param(request, "method"), param(request, "id"));
         if (!json.ok()) return node::HttpResponse{404, "text/plain", json.status().message()};
         return node::HttpResponse{200, "application/json", std::move(*json)};
       }}};
  auto server = node::HttpServer::Start(bind_address, port, std::move(routes));
  if (!server.ok()) return server.status().WithContext("--dashboard");
  board->server_ = std::move(*server);
  board->poller_ = std::thread([raw = board.get()] { raw->Poll(); });
  return board;
}

LiveDashboard::~LiveDashboard() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (poller_.joinable()) poller_.join();
  server_.reset();
}

uint16_t LiveDashboard::port() const { return server_->port(); }

void LiveDashboard::NodesStarted(const launch::MethodRun& run, launch::StatusSource statuses) {
  model_.MethodStarted(run);
  std::lock_guard<std::mutex> lock(mutex_);
  source_ = std::move(statuses);
  method_ = run.method.name;
  started_ = SteadyClock::now();
  run_cpu_at_start_ = RunCpuSeconds();
  serving_cpu_at_start_ = server_->cpu_seconds();
  DashboardCost cost;
  cost.method = run.method.name;
  costs_.push_back(cost);
  wake_.notify_all();
}

void LiveDashboard::NodesStopped(const launch::MethodRun&) {
  std::unique_lock<std::mutex> lock(mutex_);
  source_ = nullptr;
  wake_.wait(lock, [&] { return !polling_; });
  if (costs_.empty()) return;
  DashboardCost& cost = costs_.back();
  cost.wall_s = std::chrono::duration<double>(SteadyClock::now() - started_).count();
  cost.run_cpu_s = RunCpuSeconds() - run_cpu_at_start_;
  cost.serving_cpu_s = server_->cpu_seconds() - serving_cpu_at_start_;
}

void LiveDashboard::Poll() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    if (!source_) {
      wake_.wait(lock, [&] { return stopping_ || source_; });
      continue;
    }
    launch::StatusSource source = source_;
    std::string method = method_;
    double elapsed = std::chrono::duration<double>(SteadyClock::now() - started_).count();
    polling_ = true;
    lock.unlock();
    double cpu = ThreadCpuSeconds();
    auto begin = SteadyClock::now();
    std::vector<std::optional<node::NodeStatus>> statuses = source();
    double poll_ms = std::chrono::duration<double, std::milli>(SteadyClock::now() - begin).count();
    double nodes_http = 0;
    for (const auto& s : statuses) {
      if (s) nodes_http += s->http_cpu_s;
    }
    model_.Observe(method, statuses, elapsed);
    cpu = ThreadCpuSeconds() - cpu;
    lock.lock();
    polling_ = false;
    if (!costs_.empty()) {
      DashboardCost& cost = costs_.back();
      cost.mean_poll_ms = (cost.mean_poll_ms * cost.polls + poll_ms) / (cost.polls + 1);
      ++cost.polls;
      cost.polling_cpu_s += cpu;
      cost.nodes_http_cpu_s = std::max(cost.nodes_http_cpu_s, nodes_http);
    }
    wake_.notify_all();
    wake_.wait_for(lock, kPollInterval, [&] { return stopping_ || !source_; });
  }
}

void LiveDashboard::MethodEnded(const launch::MethodRun& run) {
  Status shown = model_.ShowFinished(run);
  if (!shown.ok()) {
    std::fprintf(stderr, "meshlearn-launch: dashboard: %s\n", shown.ToString().c_str());
  }
}

void LiveDashboard::RunEnded(const std::string& out_dir) {
  std::printf("%s", DescribeCosts(Costs()).c_str());
  Status written = WriteCostsCsv(launch::PathIn(out_dir, launch::kDashboardCostsFile), Costs());
  if (!written.ok()) std::fprintf(stderr, "meshlearn-launch: %s\n", written.ToString().c_str());
}

std::vector<DashboardCost> LiveDashboard::Costs() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return costs_;
}

std::string DescribeCosts(const std::vector<DashboardCost>& costs) {
  std::string text;
  for (const DashboardCost& c : costs) {
    char line[512];
    std::snprintf(line, sizeof(line),
                  "dashboard (%s): %.2f s of the run's %.1f s of CPU (%.2f%%): polling %.2f s "
                  "(%llu polls, %.0f ms each), serving the page %.2f s, nodes answering /status "
                  "%.2f s; wall %.1f s\n",
                  c.method.c_str(), c.polling_cpu_s + c.serving_cpu_s + c.nodes_http_cpu_s,
                  c.run_cpu_s, 100 * c.cpu_share(), c.polling_cpu_s,
                  static_cast<unsigned long long>(c.polls), c.mean_poll_ms, c.serving_cpu_s,
                  c.nodes_http_cpu_s, c.wall_s);
    text += line;
  }
  return text;
}

Status WriteCostsCsv(const std::string& path, const std::vector<DashboardCost>& costs) {
  std::vector<DashboardCostRow> rows;
  for (const DashboardCost& c : costs) {
    rows.push_back({.method = c.method,
                    .wall_s = c.wall_s,
                    .run_cpu_s = c.run_cpu_s,
                    .dashboard_cpu_s = c.polling_cpu_s + c.serving_cpu_s + c.nodes_http_cpu_s,
                    .cpu_share = c.cpu_share(),
                    .polling_cpu_s = c.polling_cpu_s,
                    .serving_cpu_s = c.serving_cpu_s,
                    .nodes_http_cpu_s = c.nodes_http_cpu_s,
                    .polls = c.polls,
                    .mean_poll_ms = c.mean_poll_ms});
  }
  return WriteCsvFile<DashboardCostRow>(path, rows);
}

RunInfo RunInfoOf(const launch::RunFolder& folder, const std::string& run_dir) {
  RunInfo info;
  info.scenario = folder.title;
  info.mode = "finished run";
  info.out_dir = run_dir;
  info.partition = folder.partition;
  for (const launch::MethodRun& run : folder.runs) info.methods.push_back(run.method.name);
  return info;
}

int ServeCommand(int argc, char** argv) {
  CLI::App app{"meshlearn-launch serve: show a finished run in the browser"};
  app.name("meshlearn-launch serve");
  std::string run_dir;
  uint16_t port = 0;
  std::string bind = "127.0.0.1";
  app.add_option("run_dir", run_dir, "the run folder (the launcher's --out)")->required();
  app.add_option("--dashboard", port, "port of the page (0: any free port)")->required();
  app.add_option("--dashboard-bind", bind,
                 "address of the page (default 127.0.0.1; see docs/dashboard.md on SSH)");
  if (std::optional<int> exit = tools::ParseCommandLine(app, argc, argv)) return *exit;

  auto folder = launch::ReadRunFolder(run_dir);
  if (!folder.ok()) {
    std::fprintf(stderr, "meshlearn-launch serve: %s\n", folder.status().ToString().c_str());
    return tools::kExitBadInput;
  }
  for (const std::string& note : folder->notes) std::printf("note: %s\n", note.c_str());
  const std::vector<launch::MethodRun>& runs = folder->runs;
  // Ctrl-C or SIGTERM ends the page (process/stop_signals.h).
  auto stop_signals = StopSignals::Watch(nullptr);
  if (!stop_signals.ok()) {
    std::fprintf(stderr, "meshlearn-launch serve: %s\n", stop_signals.status().ToString().c_str());
    return tools::kExitBadInput;
  }
  auto board = LiveDashboard::Start(bind, port, RunInfoOf(*folder, run_dir));
  if (!board.ok()) {
    std::fprintf(stderr, "meshlearn-launch serve: %s\n", board.status().ToString().c_str());
    return tools::kExitBadInput;
  }
  for (const launch::MethodRun& run : runs) {
    Status shown = (*board)->model().ShowFinished(run);
    if (!shown.ok()) {
      std::fprintf(stderr, "meshlearn-launch serve: %s: %s\n", run.method.name.c_str(),
                   shown.ToString().c_str());
    }
  }
  std::printf("dashboard: http://%s:%u/ (%zu method(s) of %s; Ctrl-C to stop)\n", bind.c_str(),
              (*board)->port(), runs.size(), run_dir.c_str());
  std::fflush(stdout);
  (*stop_signals)->Wait();
  return tools::kExitOk;
}

}  // namespace meshlearn::dashboard
