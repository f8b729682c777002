import Testing
@testable import RTDBCore

@Suite struct ProgressTests {
    @Test("a line with a total shows the share, the rate and the time left")
    func withTotal() {
        #expect(Progress.line("import", done: 400_000_000, total: 1_000_000_000, unit: .bytes, seconds: 4)
                == "import: 400.0 MB / 1.0 GB (40%), 100.0 MB/s, 6 s left")
        #expect(Progress.line("sync", done: 250, total: 1000, unit: .items("writes"), seconds: 0.5)
                == "sync: 250 writes / 1000 writes (25%), 500 writes/s, 2 s left")
        // Done: no time left.
        #expect(Progress.line("import", done: 1_500, total: 1_500, unit: .bytes, seconds: 3)
                == "import: 1.5 kB / 1.5 kB (100%), 500 B/s")
    }

    @Test("a line without a total shows what is done and the rate")
    func withoutTotal() {
        #expect(Progress.line("export", done: 12_345_678, total: nil, unit: .bytes, seconds: 2)
                == "export: 12.3 MB, 6.2 MB/s")
        #expect(Progress.line("push", done: 10, total: nil, unit: .items("values"), seconds: 0)
                == "push: 10 values, 0 values/s")
    }

    @Test("things counted besides the units follow them")
    func countedBesides() {
        #expect(Progress.line("read", done: 12_345_678, total: nil, unit: .bytes, seconds: 2, counted: (4500, "children"))
                == "read: 12.3 MB, 4500 children, 6.2 MB/s")
        #expect(Progress.line("push", done: 500, total: 1000, unit: .bytes, seconds: 1, counted: (7, "values"))
                == "push: 500 B / 1.0 kB (50%), 7 values, 500 B/s, 1 s left")
    }

    @Test("durations read as a person would say them")
    func durations() {
        #expect(Progress.duration(0.2) == "1 s")
        #expect(Progress.duration(200) == "3 min 20 s")
        #expect(Progress.duration(7_500) == "2 h 5 min")
        #expect(Progress.bytes(999) == "999 B")
        #expect(Progress.bytes(1_000) == "1.0 kB")
        #expect(Progress.bytes(2_500_000_000_000_000) == "2500.0 TB")
    }
}
