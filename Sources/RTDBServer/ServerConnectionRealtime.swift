import RTDBNet
import RTDBWire

/// The realtime protocol on a connection that became a session: WebSocket frames in, requests
/// queued in arrival order (run by `runQueued` as HTTP requests are), messages out.
extension ServerConnection {
    /// Reads WebSocket frames and queues the realtime requests they carry.
    func readFrames(_ session: RealtimeSession) {
        while !link.closed && !link.closing {
            let message: WebSocket.Message?
            do { message = try session.frames.next() } catch let e as WebSocket.ProtocolError {
                closeRealtime(e.code, e.reason)
                return
            } catch {
                closeRealtime(1002, "protocol error")
                return
            }
            guard let m = message else { return }
            switch m.opcode {
            case .text:
                do {
                    if case .message(let bytes) = try session.assembler.receive(m.payload) { receive(bytes) }
                } catch {
                    closeRealtime(1009, "message too big")
                    return
                }
            case .binary: closeRealtime(1003, "text frames only")
            case .ping: link.send(WebSocket.frame(.pong, m.payload))
            case .pong, .continuation: break
            case .close: closeRealtime(1000, "")
            }
        }
    }

    /// One whole realtime message from the client.
    private func receive(_ bytes: [UInt8]) {
        do {
            switch try RealtimeMessage.decode(bytes) {
            case .request(let r): enqueue(.realtime(.request(r)))
            case .control(.ping): enqueue(.realtime(.ping))
            case .control: break   // other controls carry nothing for a server
            case .response, .push: closeRealtime(1007, "not a realtime message")   // only servers send these
            }
        } catch {
            // A request whose body is wrong is answered in its turn; anything else ends the session.
            if let refused = error.refusedRequest {
                enqueue(.realtime(.refused(r: refused.r, action: refused.action, refused.error)))
            } else {
                closeRealtime(1007, "not a realtime message")
            }
        }
    }

    /// Realtime messages, each split into frames when long.
    func send(_ messages: [RealtimeMessage]) {
        for m in messages { sendFrames(RealtimeFraming.frames(m.encode())) }
    }

    func sendFrames(_ frames: [[UInt8]]) {
        for f in frames { link.send(WebSocket.frame(.text, f)) }
    }

    func closeRealtime(_ code: UInt16, _ reason: String) {
        clearQueue()
        link.send(WebSocket.closeFrame(code, reason), andClose: true)
    }
}
