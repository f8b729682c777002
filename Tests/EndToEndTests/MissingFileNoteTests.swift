import Foundation
import Testing

/// A typo in --db must not be silent for a person: reads of a database file that does not exist
/// still print null / nothing (scripts rely on it), and a terminal on stderr is told.
extension TerminalTests {
    @Test(arguments: [["get", "/x"], ["query", "/x"], ["get", "/", "--shallow", "-r"]])
    func readingAMissingFileSaysSoOnATerminal(args: [String]) throws {
        let sb = Sandbox()
        let typo = sb.dir + "/tset.db"
        let t = try onTerminal(sb, args + ["--db", typo])
        #expect(t.status == "status=0")
        #expect(t.lines == ["rtdb: note: the database file \(typo) does not exist yet (nothing has been written to it)"], "\(t.lines)")
        #expect(!sb.exists(typo), "a read must not create the file")
    }

    @Test func watchingAMissingFileSaysSoOnATerminal() throws {
        let sb = Sandbox()
        let t = try onTerminal(sb, ["watch", "/x", "--count", "1"])
        #expect(t.status == "status=0")
        #expect(t.lines == ["rtdb: note: the database file \(sb.db) does not exist yet (nothing has been written to it)"], "\(t.lines)")
    }

    @Test func noNoteWhenTheFileExistsOrWithQuiet() throws {
        let sb = Sandbox()
        let quiet = try onTerminal(sb, ["get", "/x", "-q"])
        #expect(quiet.status == "status=0")
        #expect(quiet.lines == [], "\(quiet.lines)")
        sb.seed("/a", "1")
        let t = try onTerminal(sb, ["get", "/x"])
        #expect(t.status == "status=0")
        #expect(t.lines == [], "\(t.lines)")
    }

    @Test func aWriteCreatesTheFileWithoutANote() throws {
        let sb = Sandbox()
        let t = try onTerminal(sb, ["set", "/a", "1"])
        #expect(t.status == "status=0")
        #expect(t.lines == [], "\(t.lines)")
        #expect(sb.exists(sb.db))
    }

    @Test func execFailureOnATerminalIsASentence() throws {
        let sb = Sandbox()
        sb.seed("/j", "\"x\"")
        let t = try onTerminal(sb, ["watch", "/j", "--count", "1", "--exec-fail", "stop", "--exec", "--", "sh", "-c", "exit 4"])
        #expect(t.status == "status=4")
        #expect(t.lines == ["rtdb: --exec: sh exited with status 4 for {\"event\":\"value\",\"path\":\"/j\",\"value\":\"x\"}"], "\(t.lines)")
    }

    @Test func optionLikeArgumentHintOnATerminal() throws {
        let sb = Sandbox()
        let t = try onTerminal(sb, ["get", "-P74-Dhh"])
        #expect(t.status == "status=2")
        #expect(t.lines.first == "rtdb: error: unknown option -P74-Dhh for get; if it is a path or key, write -- before it "
                + "or give it a leading / (/-P74-Dhh)", "\(t.lines)")
    }
}

/// When stderr is not a terminal, a read of a missing file prints only its data.
@Suite struct MissingFileWithoutTerminalTests {
    @Test func scriptsSeeNoNote() {
        let sb = Sandbox()
        expectOK(sb.rtdb("get", "/x"), "null\n")
        expectOK(sb.rtdb("query", "/x"), "")
        expectOK(sb.rtdb("get", "/x", "-r"), "null\n")
        #expect(!sb.exists(sb.db))
    }
}
