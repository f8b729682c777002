import RTDBCore

/// A `--url` watch tells when its event stream is lost and back (RemoteStream.swift).
extension RemoteDatabase: StreamNotices {
    public var streamURL: String { target.display }
}
