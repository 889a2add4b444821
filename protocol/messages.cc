#include "protocol/messages.h"

#include "protocol/version.h"

namespace meshlearn {

const char* MessageTypeName(MessageType type) {
  switch (type) {
    case MessageType::kHello:
      return "Hello";
    case MessageType::kHelloAck:
      return "HelloAck";
    case MessageType::kPeerList:
      return "PeerList";
    case MessageType::kGetModel:
      return "GetModel";
    case MessageType::kModel:
      return "Model";
    case MessageType::kEmbedRequest:
      return "EmbedRequest";
    case MessageType::kEmbedReply:
      return "EmbedReply";
    case MessageType::kEmdDecision:
      return "EmdDecision";
    case MessageType::kPing:
      return "Ping";
    case MessageType::kPong:
      return "Pong";
    case MessageType::kError:
      return "Error";
    case MessageType::kWitnessEmbedRequest:
      return "WitnessEmbedRequest";
    case MessageType::kWitnessRows:
      return "WitnessRows";
    case MessageType::kWitnessResult:
      return "WitnessResult";
    case MessageType::kGetSignature:
      return "GetSignature";
    case MessageType::kSignature:
      return "Signature";
    case MessageType::kGoodbye:
      return "Goodbye";
  }
  return "unknown";
}

MessageType TypeOf(const Body& body) {
  return std::visit([](const auto& m) { return std::decay_t<decltype(m)>::kType; }, body);
}

Message MakeMessage(std::string sender, uint64_t request_id, int64_t round, Body body) {
  Message message;
  message.envelope.magic = kProtocolMagic;
  message.envelope.protocol_version = kProtocolVersion;
  message.envelope.min_version = kMinProtocolVersion;
  message.envelope.type = TypeOf(body);
  message.envelope.sender = std::move(sender);
  message.envelope.request_id = request_id;
  message.envelope.round = round;
  message.body = std::move(body);
  return message;
}

}  // namespace meshlearn
