#include "node/host/relays.h"

#include <chrono>

#include "node/transport/endpoint.h"

namespace meshlearn::node {

Result<NodeRelays> StartRelays(NodeConfig& config) {
  NodeRelays relays;
  const RelaySection& relay = config.relay;
  if (relay.serve_at.empty() && relay.via.empty()) return relays;
  std::optional<CurveOptions> curve;
  if (config.security) {
    auto keys = LoadNodeKeys(config);
    if (!keys.ok()) return keys.status();
    curve = CurveOptions{keys->public_key, keys->secret_key, keys->allowed_keys};
  }
  if (!relay.serve_at.empty()) {
    RelayServerOptions options;
    options.control_endpoint = relay.serve_at;
    options.bind_host =
        EndpointHost(relay.serve_at) == "*" ? "0.0.0.0" : EndpointHost(relay.serve_at);
    options.public_host =
        relay.public_host.empty()
            ? EndpointHost(config.advertise.empty() ? config.listen : config.advertise)
            : relay.public_host;
    options.max_clients = static_cast<size_t>(relay.max_clients);
    options.max_circuits = static_cast<size_t>(relay.max_circuits);
    options.curve = curve;
    auto server = StartRelayServer(options);
    if (!server.ok()) return server.status().WithContext("[relay] serve_at");
    relays.server = std::move(*server);
  }
  if (!relay.via.empty()) {
    const std::string port = EndpointPort(config.listen);
    if (port == "0" || port == "*") {
      return Status::InvalidArgument(
          "[relay] via needs a fixed listen port (not " + port +
          "): the relay carries its connections to this node's own listen port");
    }
    const std::string host = EndpointHost(config.listen);
    RelayClientOptions options;
    options.node_id = config.id;
    options.relay_endpoint = relay.via;
    options.relay_public_key = relay.via_public_key;
    options.local_endpoint = "tcp://" +
                             (host == "*" || host == "0.0.0.0" ? std::string("127.0.0.1") : host) +
                             ":" + port;
    options.curve = curve;
    auto client = StartRelayClient(
        options, std::chrono::duration_cast<std::chrono::milliseconds>(config.round.Deadline()));
    if (!client.ok()) return client.status().WithContext("[relay] via");
    relays.client = std::move(*client);
    config.advertise = relays.client->relayed_endpoint();
  }
  return relays;
}

}  // namespace meshlearn::node
