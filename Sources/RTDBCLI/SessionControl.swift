import RTDBCore
import RTDBNet
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How another process reaches a session whose operations only its holder can change (a
/// remote database's session, whose realtime connection belongs to the `rtdb session` process;
/// a `--client-side` one): the holder listens on a Unix socket,
/// `RUNTIME/rtdb/ID/control`, where RUNTIME is `$XDG_RUNTIME_DIR`, else `$TMPDIR` (or `/tmp`)
/// with `rtdb-UID` in place of `rtdb`. Both folders are made with mode 0700 and must belong to
/// this user with no access for others (one that does not is refused): only this user, and
/// root, can connect.
///
/// One connection carries one change: the asker sends two lines, `{"op":OP,"path":P}` and the
/// value (JSON in export form; `null` for `remove` and `cancel`), and the holder answers one
/// line, `{"ok":true}` once the change is registered (for a remote database: once the server
/// acknowledged it), or `{"error":{"code":C,"message":M}}` with the refusal, then closes. The
/// holder removes the socket and its folder when the session ends; a socket left by a holder
/// that was killed refuses connections, and the asker removes it.
enum SessionControl {
    /// The folder of the sessions' folders, made (0700) when `create`; nil when it does not
    /// exist and is not to be made.
    static func folder(create: Bool) throws -> String? {
        let base: String
        if let runtime = Invocation.env("XDG_RUNTIME_DIR"), runtime.hasPrefix("/") {
            base = runtime + "/rtdb"
        } else {
            let tmp = Invocation.env("TMPDIR").flatMap { $0.hasPrefix("/") ? $0 : nil } ?? "/tmp"
            base = (tmp.hasSuffix("/") ? String(tmp.dropLast()) : tmp) + "/rtdb-\(getuid())"
        }
        return try privateFolder(base, create: create) ? base : nil
    }

    /// True when `path` is a folder of this user's that nobody else may enter (made so when
    /// `create` and missing); false when it is missing. Anything else is refused.
    static func privateFolder(_ path: String, create: Bool) throws -> Bool {
        if create && mkdir(path, 0o700) != 0 && errno != EEXIST {
            let e = errno
            throw RTDBError(e == EACCES || e == EPERM ? .permissionDenied : .ioError,
                            "cannot create the session control folder \(path): \(String(cString: strerror(e)))")
        }
        var st = stat()
        guard lstat(path, &st) == 0 else {
            if errno == ENOENT { return false }
            throw RTDBError(.ioError, "cannot read the session control folder \(path): \(String(cString: strerror(errno)))")
        }
        guard st.st_mode & S_IFMT == S_IFDIR, st.st_uid == getuid(), st.st_mode & 0o077 == 0 else {
            throw RTDBError(.permissionDenied, "the session control folder \(path) is not a private folder of this user "
                            + "(a folder of mode 0700 it owns); remove it, or set XDG_RUNTIME_DIR")
        }
        return true
    }

    /// A session id names a folder: a push ID's characters only, so it can name nothing else.
    static func validID(_ id: String) -> Bool {
        id.utf8.count >= 1 && id.utf8.count <= 64 && id != "." && id != ".."
            && id.utf8.allSatisfy { PushIDGenerator.alphabet.contains($0) }
    }

    // MARK: the holder's end

    /// The listening socket of a session held by this process, removed with its folder when
    /// released.
    final class Listener {
        let fd: Int32
        let folder: String
        let path: String

        init(id: String) throws {
            guard validID(id), let base = try SessionControl.folder(create: true) else {
                throw RTDBError(.internal, "session: no control folder for \(Limits.quote(id))")
            }
            folder = base + "/" + id
            path = folder + "/control"
            _ = try SessionControl.privateFolder(folder, create: true)
            do {
                fd = try LocalSocket.listen(path)
            } catch {
                rmdir(folder)
                throw RTDBError(.ioError, "session: cannot listen on its control socket: \(error)")
            }
        }

        deinit {
            close(fd)
            unlink(path)
            rmdir(folder)
        }

        /// Answers every asker waiting now, each with `apply`'s outcome for its change.
        func answerWaiting(_ apply: (DisconnectChange) throws -> Void) {
            while let c = LocalSocket.accept(fd) {
                defer { close(c) }
                // A slow asker does not hold the session up for long.
                let deadline = monotonicMillis() + 5_000
                guard let header = LocalSocket.readLine(c, limit: 64 * 1024, deadline: deadline),
                      let value = LocalSocket.readLine(c, limit: Limits.maxWriteBytes + 64, deadline: deadline) else { continue }
                var reply: [UInt8]
                do {
                    try apply(try SessionControl.decode(header, value))
                    reply = Array(#"{"ok":true}"#.utf8)
                } catch let e as RTDBError {
                    reply = SessionControl.errorLine(e)
                } catch {
                    reply = SessionControl.errorLine(RTDBError(.internal, "\(error)"))
                }
                reply.append(0x0A)
                LocalSocket.writeAll(c, reply, deadline: monotonicMillis() + 5_000)
            }
        }
    }

    // MARK: the asker's end

    /// Asks the process holding session `id` to make `change`: true once it did, false when no
    /// process of this user holds a session of that id. Throws its refusal, `not_found` when the
    /// holder is gone, or `timeout` when it does not answer within `timeoutMillis` (-1: no limit).
    static func ask(_ id: String, _ change: DisconnectChange, timeoutMillis: Int) throws -> Bool {
        guard validID(id), let base = try folder(create: false) else { return false }
        let folder = base + "/" + id
        guard try privateFolder(folder, create: false) else { return false }
        let path = folder + "/control"
        let deadline = timeoutMillis < 0 ? Int64.max : monotonicMillis() + Int64(timeoutMillis)
        let c: Int32
        do {
            c = try LocalSocket.connect(path)
        } catch let e as LocalSocket.Refused {
            if e.errno == ENOENT { return false }
            // Nobody listens: the holder was killed. Its leftovers go.
            unlink(path)
            rmdir(folder)
            throw RTDBError(.notFound, "no live session \(Limits.quote(id)): its process is gone; nothing was changed")
        } catch {
            throw RTDBError(.ioError, "cannot reach session \(Limits.quote(id)): \(error)")
        }
        defer { close(c) }
        var request = encodeHeader(change)
        request.append(0x0A)
        request += encodeValue(change)
        request.append(0x0A)
        guard LocalSocket.writeAll(c, request, deadline: deadline) else {
            throw RTDBError(.notFound, "no live session \(Limits.quote(id)): it ended before it read the change")
        }
        guard let answer = LocalSocket.readLine(c, limit: 1 << 20, deadline: deadline) else {
            if monotonicMillis() >= deadline {
                throw RTDBError(.timeout, "session \(Limits.quote(id)) did not answer within \(Quantity.seconds(Double(timeoutMillis) / 1000)); "
                                + "the change may still be made")
            }
            throw RTDBError(.notFound, "no live session \(Limits.quote(id)): it ended before it answered")
        }
        let reply = try? JSONReader.parse(answer)
        if case .bool(true) = reply?.child("ok") { return true }
        if let e = reply?.child("error"), case .string(let code) = e.child("code"), case .string(let message) = e.child("message") {
            throw RTDBError(RTDBError.Code(rawValue: code) ?? .internal, message)
        }
        throw RTDBError(.internal, "session \(Limits.quote(id)) answered something unexpected")
    }

    // MARK: the two lines

    static func encodeHeader(_ change: DisconnectChange) -> [UInt8] {
        var out = Array(#"{"op":"#.utf8)
        JSONWriter.appendString(change.kind, to: &out)
        out += Array(#","path":"#.utf8)
        JSONWriter.appendString(change.path.description, to: &out)
        out.append(UInt8(ascii: "}"))
        return out
    }

    static func encodeValue(_ change: DisconnectChange) -> [UInt8] {
        switch change {
        case .register(.set(_, let v)): return Array(JSONWriter.string(v, export: true).utf8)
        case .register(.update(_, let entries)):
            return Array(JSONWriter.string(.object(entries.map { Node.Entry($0.path.unrooted, $0.value) }), export: true).utf8)
        case .register(.remove), .cancel: return Array("null".utf8)
        }
    }

    /// The change the two lines ask for, checked as the command line checks it.
    static func decode(_ header: [UInt8], _ value: [UInt8]) throws -> DisconnectChange {
        let h = try JSONReader.parse(header)
        guard case .string(let op) = h.child("op"), case .string(let pathText) = h.child("path") else {
            throw RTDBError(.usage, "a session change needs an op and a path")
        }
        let path = try Path(pathText)
        switch op {
        case "set":
            let v = try JSONReader.parse(value)
            try WriteCheck.value(v, at: path)
            return .register(.set(path, v))
        case "update":
            guard let raw = try value.withUnsafeBufferPointer({ try JSONReader.parseEntries($0) }) else { throw RTDBError(.invalidData, "an update needs a JSON object") }
            return .register(.update(path, try WriteCheck.update(raw, at: path)))
        case "remove":
            try WriteCheck.writable(path)
            return .register(.remove(path))
        case "cancel": return .cancel(path)
        default: throw RTDBError(.usage, "unknown session change \(Limits.quote(op))")
        }
    }

    static func errorLine(_ e: RTDBError) -> [UInt8] {
        var out = Array(#"{"error":{"code":"#.utf8)
        JSONWriter.appendString(e.code.rawValue, to: &out)
        out += Array(#","message":"#.utf8)
        JSONWriter.appendString(e.message, to: &out)
        out += Array("}}".utf8)
        return out
    }
}
