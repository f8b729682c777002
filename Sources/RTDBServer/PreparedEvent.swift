import RTDBCore
import RTDBWire

/// An event and the bytes each kind of subscriber is sent for it, rendered once per protocol
/// and location. An event of a huge write is rendered on the thread that built it
/// (`EventBuilder`), so the loop only hands the bytes out; a form nobody asked for in advance
/// is rendered when it is first needed.
struct PreparedEvent: Sendable {
    let event: StreamEvent
    private(set) var plainFrame: [UInt8]? = nil
    private(set) var exportFrame: [UInt8]? = nil
    /// WebSocket frames of the realtime push, by listen (`RealtimeSession.listenKey`).
    private(set) var pushes: [[UInt8]: [[UInt8]]] = [:]

    init(_ event: StreamEvent) { self.event = event }

    /// The event with the bytes for `kinds` already rendered.
    init(_ event: StreamEvent, renderedFor kinds: [StreamSubscriber.Kind]) {
        self.event = event
        for kind in kinds { each(for: kind) { _ in } }
    }

    /// Passes `send` the bytes (one SSE frame, or the push's WebSocket frames) for a subscriber
    /// of `kind`, rendered the first time they are asked for. (No array per call: a fan-out to
    /// a thousand streams asks a thousand times.)
    mutating func each(for kind: StreamSubscriber.Kind, _ send: ([UInt8]) -> Void) {
        switch kind {
        case .sse(let export):
            if export {
                let frame = exportFrame ?? event.sseFrame(export: true)
                exportFrame = frame
                send(frame)
            } else {
                let frame = plainFrame ?? event.sseFrame(export: false)
                plainFrame = frame
                send(frame)
            }
        case .realtime(let location, let tag):
            let key = RealtimeSession.listenKey(location, tag)
            let frames = pushes[key] ?? RealtimeFraming.frames(RealtimeMessage.push(RealtimePush(event, at: location, tag: tag)).encode())
                .map { WebSocket.frame(.text, $0) }
            if pushes[key] == nil { pushes[key] = frames }
            for f in frames { send(f) }
        }
    }
}
