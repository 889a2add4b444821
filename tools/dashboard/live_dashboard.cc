#include "tools/dashboard/live_dashboard.h"

#include <pthread.h>
#include <sys/resource.h>
#include <time.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <CLI/CLI.hpp>

#include "base/atomic_file.h"
#include "tools/launch/scenario.h"
#include "tools/plot/matrix_csv.h"

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

// Splits a CSV line whose cells may be quoted (no quotes inside quoted cells).
std::vector<std::string> CsvCells(const std::string& line) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (char c : line) {
    if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      cells.emplace_back();
    } else if (c != '\r') {
      cells.back() += c;
    }
  }
  return cells;
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
  std::ostringstream csv;
  csv.precision(6);
  csv << "method,wall_s,run_cpu_s,dashboard_cpu_s,cpu_share,polling_cpu_s,serving_cpu_s,"
         "nodes_http_cpu_s,polls,mean_poll_ms\n";
  for (const DashboardCost& c : costs) {
    csv << '"' << c.method << "\"," << c.wall_s << ',' << c.run_cpu_s << ','
        << c.polling_cpu_s + c.serving_cpu_s + c.nodes_http_cpu_s << ',' << c.cpu_share() << ','
        << c.polling_cpu_s << ',' << c.serving_cpu_s << ',' << c.nodes_http_cpu_s << ',' << c.polls
        << ',' << c.mean_poll_ms << '\n';
  }
  return WriteFileAtomically(path, csv.str());
}

Result<RunInfo> ReadRunFolder(const std::string& run_dir, std::vector<launch::MethodRun>& runs) {
  namespace fs = std::filesystem;
  auto clusters = plot::ReadClusterCsv(run_dir + "/clusters.csv");
  if (!clusters.ok()) return clusters.status().WithContext("not a launcher run folder");
  RunInfo info;
  info.mode = "finished run";
  info.out_dir = run_dir;
  info.scenario = fs::path(run_dir).lexically_normal().filename().string();
  if (info.scenario.empty()) info.scenario = fs::absolute(run_dir).parent_path().filename();
  launch::Partition& p = info.partition;
  for (const auto& [id, cluster] : *clusters) p.ids.push_back(id);
  std::sort(p.ids.begin(), p.ids.end(), plot::NaturalLess);
  for (const std::string& id : p.ids) {
    p.clusters.push_back(clusters->at(id));
    p.num_clusters = std::max(p.num_clusters, clusters->at(id) + 1);
  }
  // The methods in run order, their wall times and the metric: summary.csv when there is one,
  // else every folder with node folders in it.
  std::map<std::string, double> wall;
  std::optional<bool> classification;
  if (auto summary = ReadWholeFile(run_dir + "/summary.csv"); summary.ok()) {
    std::istringstream lines(*summary);
    std::string line;
    std::getline(lines, line);
    std::vector<std::string> header = CsvCells(line);
    auto column = [&](const std::string& name) {
      return std::find(header.begin(), header.end(), name) - header.begin();
    };
    size_t metric = column("metric"), wall_s = column("wall_s");
    for (int number = 2; std::getline(lines, line); ++number) {
      std::vector<std::string> cells = CsvCells(line);
      if (cells.size() != header.size()) {
        return Status::Malformed(run_dir + "/summary.csv:" + std::to_string(number) + ": " +
                                 std::to_string(cells.size()) + " cells, the header has " +
                                 std::to_string(header.size()));
      }
      info.methods.push_back(cells[0]);
      if (wall_s < cells.size()) wall[cells[0]] = std::strtod(cells[wall_s].c_str(), nullptr);
      if (metric < cells.size()) classification = cells[metric] == "accuracy";
    }
  } else {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(run_dir, ec)) {
      if (!entry.is_directory() || entry.path().filename() == "shards") continue;
      for (const auto& inner : fs::directory_iterator(entry.path(), ec)) {
        if (inner.path().filename().string().rfind("node-", 0) == 0) {
          info.methods.push_back(entry.path().filename().string());
          break;
        }
      }
    }
    std::sort(info.methods.begin(), info.methods.end(), plot::NaturalLess);
  }
  if (info.methods.empty()) {
    return Status::NotFound(run_dir + ": no method folder (a folder of node-<id> folders)");
  }
  for (const std::string& name : info.methods) {
    launch::MethodRun run;
    run.method.name = name;
    run.dir = run_dir + "/" + launch::Slug(name);
    if (!fs::is_directory(run.dir)) run.dir = run_dir + "/" + name;
    run.wall_seconds = wall.count(name) ? wall[name] : 0;
    for (size_t i = 0; i < p.ids.size(); ++i) {
      launch::NodeRun n;
      n.id = p.ids[i];
      n.cluster = p.clusters[i];
      n.dir = run.dir + "/node-" + n.id;
      auto rows = node::ReadRoundsCsv(n.dir + "/rounds.csv");
      if (rows.ok()) n.rounds = std::move(*rows);
      if (!classification && !n.rounds.empty()) {
        classification = std::isfinite(n.rounds.front().test_acc);
      }
      run.nodes.push_back(std::move(n));
    }
    runs.push_back(std::move(run));
  }
  p.classification = classification.value_or(true);
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
                 "address of the page (default 127.0.0.1; see the README on SSH)");
  CLI11_PARSE(app, argc, argv);

  std::vector<launch::MethodRun> runs;
  auto info = ReadRunFolder(run_dir, runs);
  if (!info.ok()) {
    std::fprintf(stderr, "meshlearn-launch serve: %s\n", info.status().ToString().c_str());
    return 2;
  }
  // Signals are taken by sigwait below; blocked before any thread starts so all inherit it.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  auto board = LiveDashboard::Start(bind, port, std::move(*info));
  if (!board.ok()) {
    std::fprintf(stderr, "meshlearn-launch serve: %s\n", board.status().ToString().c_str());
    return 2;
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
  int signal = 0;
  sigwait(&signals, &signal);
  return 0;
}

}  // namespace meshlearn::dashboard
