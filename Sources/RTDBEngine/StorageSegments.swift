extension StorageKey {
    /// Appends the ranges of the segments of `rel` (an encoded path below some location), in
    /// order. An empty `rel` is one empty segment: the row of the location itself.
    @inline(__always)
    static func appendSegments(of rel: UnsafeBufferPointer<UInt8>, to segs: inout [Range<Int>]) {
        var s = 0
        repeat {
            let end = segmentEnd(rel, from: s)
            segs.append(s..<end)
            s = end
        } while s < rel.count
    }
}
