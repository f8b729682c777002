import Foundation
import RTDBCLI
import Testing

// Real completion tests: each script is loaded into its shell, a command line is "typed", and
// the candidates the shell would offer are compared with what the registry says, against
// temporary databases. A missing shell fails the test (CI installs bash, zsh and fish).
//
// bash: the script is sourced, COMP_WORDS/COMP_CWORD/COMP_LINE/COMP_POINT are set as readline
//       would (split at blanks and COMP_WORDBREAKS), _rtdb is called and COMPREPLY read;
//       `compopt` is shadowed to record `-o nospace`.
// zsh:  an interactive `zsh -f -i` runs under zpty with compinit and the script on $fpath;
//       each line is typed and Tab pressed; a `compadd` wrapper prints every candidate that
//       reaches the completion system, and whether it was added with an empty suffix.
// fish: the script is sourced into `fish --no-config` and `complete -C LINE` lists candidates.

enum Shell: String, CaseIterable, Sendable {
    case bash, zsh, fish
}

struct Offered {
    var candidates: [String] = []
    var nospace = false
}

/// One completion check: the typed line, candidates that must be offered (exactly, or by file
/// name suffix) and candidates that must not.
struct CompletionCase {
    let line: String
    var expected: [String] = []
    var absent: [String] = []
    var bySuffix = false
    var nospace = false
}

/// Temporary databases and files the completions are run against.
final class CompletionFixture {
    let dir: TempDir
    let defaultDB: String
    let otherDB: String
    let environment: [String: String]

    init() throws {
        dir = try TempDir()
        defaultDB = dir.path("seed.db")
        otherDB = dir.path("other.db")
        let rtdb = try Package.rtdb()
        let seeds = [
            (defaultDB, #"{"users":{"alice":{"age":30},"albert":{"age":41},"bob":{"age":25}},"usage":{"today":3},"posts":{"p1":{"title":"hi"}}}"#),
            (otherDB, #"{"orders":{"o1":1},"other":true,"users2":1}"#),
        ]
        for (file, json) in seeds {
            let r = try run(rtdb, ["--db", file, "set", "/", json])
            guard r.status == 0 else { throw Failure("seeding \(file) failed: \(r.stderr)") }
        }
        try Data("{}".utf8).write(to: dir.url.appendingPathComponent("value.json"))
        var env = ProcessInfo.processInfo.environment
        env["PATH"] = try Package.binDir().path + ":" + (env["PATH"] ?? "/usr/bin:/bin")
        env["RTDB_DB"] = defaultDB
        env["HOME"] = dir.path("home")
        env["XDG_DATA_HOME"] = dir.path("home/data")
        env["XDG_CONFIG_HOME"] = dir.path("home/config")
        env["XDG_CACHE_HOME"] = dir.path("home/cache")
        env["TERM"] = "xterm"
        env.removeValue(forKey: "RTDB_URL")
        try FileManager.default.createDirectory(atPath: dir.path("home"), withIntermediateDirectories: true)
        environment = env
    }

    /// The checks, derived from the registry where the registry knows.
    func cases() -> [CompletionCase] {
        let visible = Registry.visibleCommands
        let hidden = Registry.commands.filter(\.hidden).map(\.name)
        let names = visible.map(\.name)
        func spellings(_ options: [OptionSpec]) -> [String] { options.flatMap { [$0.long] + ($0.short.map { [$0] } ?? []) } }
        let globals = spellings(Registry.globalOptions)
        let everyCommandOption = Set(visible.flatMap { spellings($0.options) })

        var list: [CompletionCase] = [
            CompletionCase(line: "rtdb ", expected: names, absent: hidden),
            CompletionCase(line: "rtdb _", expected: [], absent: hidden),
            CompletionCase(line: "rtdb help _", expected: [], absent: hidden),
            CompletionCase(line: "rtdb q", expected: ["query"], absent: ["get", "set"]),
            CompletionCase(line: "rtdb query --order-by-c", expected: ["--order-by-child"], absent: ["--order-by-key"]),
            CompletionCase(line: "rtdb --ti", expected: ["--timeout"]),
            CompletionCase(line: "rtdb get --pre", expected: ["--pretty"]),
            CompletionCase(line: "rtdb get /users/a", expected: ["/users/alice", "/users/albert"], absent: ["/users/bob"], nospace: true),
            CompletionCase(line: "rtdb get /pos", expected: ["/posts"], nospace: true),
            CompletionCase(line: "rtdb get /users/alice/", expected: ["/users/alice/age"], nospace: true),
            // --db on the command line redirects path completion to that file, wherever it stands.
            CompletionCase(line: "rtdb --db \(otherDB) get /o", expected: ["/orders", "/other"], absent: ["/posts"], nospace: true),
            CompletionCase(line: "rtdb --db=\(otherDB) get /o", expected: ["/orders", "/other"], absent: ["/posts"], nospace: true),
            CompletionCase(line: "rtdb get --db \(otherDB) /us", expected: ["/users2"], absent: ["/users", "/usage"], nospace: true),
            CompletionCase(line: "rtdb --db \(otherDB) query /p", expected: [], absent: ["/posts"]),
            CompletionCase(line: "rtdb help op", expected: ["options"]),
            CompletionCase(line: "rtdb help gu", expected: ["guide"]),
            CompletionCase(line: "rtdb on-disconnect ", expected: ["set", "update", "remove", "cancel"], absent: ["/users"]),
            CompletionCase(line: "rtdb on-disconnect set /us", expected: ["/usage", "/users"], absent: ["/posts"], nospace: true),
        ]
        for c in visible {
            // Every option of the command and every global option; none of another command's.
            let own = spellings(c.options)
            list.append(CompletionCase(line: "rtdb \(c.name) -", expected: own + globals,
                                       absent: everyCommandOption.subtracting(own).sorted()))
            if let first = c.arguments.first {
                switch first.kind {
                case .path:
                    list.append(CompletionCase(line: "rtdb \(c.name) /us", expected: ["/usage", "/users"], absent: ["/posts"], nospace: true))
                case .command:
                    list.append(CompletionCase(line: "rtdb \(c.name) ", expected: names, absent: hidden))
                default:
                    break
                }
            }
            for o in c.options {
                if o.kind == .file {
                    list.append(CompletionCase(line: "rtdb \(c.name) \(o.long) \(dir.path("val"))", expected: ["value.json"], bySuffix: true))
                }
                if !o.choices.isEmpty {
                    list.append(CompletionCase(line: "rtdb \(c.name) \(o.long) ", expected: o.choices))
                }
            }
        }
        for o in Registry.globalOptions {
            if o.kind == .file {
                list.append(CompletionCase(line: "rtdb \(o.long) \(dir.path("see"))", expected: ["seed.db"], bySuffix: true))
                list.append(CompletionCase(line: "rtdb get \(o.long) \(dir.path("see"))", expected: ["seed.db"], bySuffix: true))
            }
            if !o.choices.isEmpty {
                list.append(CompletionCase(line: "rtdb \(o.long) ", expected: o.choices))
            }
        }
        return list
    }

    /// Types every line into `shell` and returns what it offered for each.
    func complete(_ shell: Shell, _ lines: [String]) throws -> [String: Offered] {
        let program = try requireTool(shell.rawValue)
        let harness = dir.url.appendingPathComponent("harness.\(shell.rawValue)")
        let arguments: [String]
        switch shell {
        case .bash:
            try Data(Harness.bash.utf8).write(to: harness)
            arguments = ["--norc", "--noprofile", harness.path, Package.file("completions/rtdb.bash").path] + lines
        case .zsh:
            try Data(Harness.zsh.utf8).write(to: harness)
            arguments = ["-f", harness.path, Package.file("completions").path] + lines
        case .fish:
            try Data(Harness.fish.utf8).write(to: harness)
            arguments = ["--no-config", harness.path, Package.file("completions/rtdb.fish").path] + lines
        }
        let r = try run(program, arguments, environment: environment, directory: dir.url, timeout: 90)
        guard r.status == 0 else {
            throw Failure("the \(shell) harness failed with status \(r.status): \(r.stderr)\n\(r.stdout)")
        }
        var results: [String: Offered] = [:]
        var current: String? = nil
        var offered = Offered()
        for line in r.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if line.hasPrefix("<<<") {
                current = String(line.dropFirst(3))
                offered = Offered()
            } else if line == ">>>", let key = current {
                results[key] = offered
                current = nil
            } else if current != nil, line.hasPrefix("C:") {
                offered.candidates.append(String(line.dropFirst(2)))
            } else if current != nil, line == "F:nospace" {
                offered.nospace = true
            }
        }
        return results
    }
}

@Suite("shell completions")
struct CompletionTests {
    @Test("candidates offered by each shell", arguments: Shell.allCases)
    func completions(_ shell: Shell) throws {
        let fixture = try CompletionFixture()
        let cases = fixture.cases()
        let results = try fixture.complete(shell, cases.map(\.line))
        for c in cases {
            guard let offered = results[c.line] else {
                Issue.record("\(shell): no result for `\(c.line)`")
                continue
            }
            let got = offered.candidates
            let missing = c.expected.filter { e in
                !got.contains { c.bySuffix ? $0.hasSuffix(e) : $0 == e }
            }
            #expect(missing.isEmpty, "\(shell): `\(c.line)` did not offer \(missing); it offered \(got)")
            let unwanted = c.absent.filter { got.contains($0) }
            #expect(unwanted.isEmpty, "\(shell): `\(c.line)` offered \(unwanted), which it must not; it offered \(got)")
            if c.nospace && !c.expected.isEmpty {
                switch shell {
                case .bash, .zsh:
                    #expect(offered.nospace, "\(shell): `\(c.line)` completes a path but adds a space after it")
                case .fish:
                    // fish has no no-space flag: a lone path is offered together with PATH/.
                    if c.expected.count == 1 {
                        #expect(got.contains(c.expected[0] + "/"), "\(shell): `\(c.line)` offers a lone path without PATH/, so fish adds a space: \(got)")
                    }
                }
            }
        }
    }
}

/// The three harnesses. Each prints, per typed line, "<<<LINE", then "C:candidate" lines,
/// "F:nospace" when the shell was told not to add a space, and ">>>".
enum Harness {
    static let bash = #"""
    # usage: bash --norc --noprofile harness.bash COMPLETION_SCRIPT LINE...
    source "$1" || exit 2
    shift
    __nospace=0
    compopt() { local a; for a; do [[ $a == nospace ]] && __nospace=1; done; return 0; }
    # Split like readline: at blanks, and runs of COMP_WORDBREAKS characters are words.
    breaks=${COMP_WORDBREAKS//[[:space:]\"\']/}
    for line; do
        words=() w="" kind=""
        for ((i = 0; i < ${#line}; i++)); do
            c=${line:i:1}
            if [[ $c == [[:space:]] ]]; then
                [[ -n $w ]] && words+=("$w")
                w="" kind=""
                continue
            fi
            if [[ $breaks == *"$c"* ]]; then k=b; else k=n; fi
            if [[ -n $w && $k != "$kind" ]]; then words+=("$w"); w=""; fi
            w+=$c kind=$k
        done
        words+=("$w")
        COMP_WORDS=("${words[@]}")
        COMP_CWORD=$((${#words[@]} - 1))
        COMP_LINE=$line
        COMP_POINT=${#line}
        COMPREPLY=()
        __nospace=0
        prev=""
        ((COMP_CWORD > 0)) && prev=${words[COMP_CWORD - 1]}
        _rtdb rtdb "${words[COMP_CWORD]}" "$prev"
        printf '<<<%s\n' "$line"
        for c in "${COMPREPLY[@]}"; do printf 'C:%s\n' "$c"; done
        ((__nospace)) && echo "F:nospace"
        echo ">>>"
    done
    """#

    static let zsh = #"""
    # usage: zsh -f harness.zsh COMPLETIONS_DIR LINE...
    # Types each LINE into one interactive zsh under zpty and presses Tab.
    zmodload zsh/zpty || { print -u2 'error: the zsh/zpty module is missing'; exit 2 }
    compdir=$1; shift
    setup=$(mktemp) || exit 2
    print -r -- "fpath=(${(q)compdir} \$fpath)" > $setup
    cat >> $setup <<'SETUP'
    PROMPT='' RPROMPT='' PS2=''
    unsetopt zle_bracketed_paste auto_list list_beep beep 2>/dev/null
    autoload -U compinit && compinit -u -D
    bindkey -e
    rtdb-test-tab() { zle complete-word; print -rn -- $'\n<<END>>\n' }
    zle -N rtdb-test-tab
    bindkey '^I' rtdb-test-tab
    zstyle ':completion:*' insert-tab false
    zstyle ':completion:*' menu no
    compadd() {
      if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then
        builtin compadd "$@"; return $?
      fi
      local -a __hits
      builtin compadd -A __hits "$@"
      (( $#__hits )) || return 1
      local nospace=0 i
      for (( i = 1; i < $#; i++ )); do
        [[ ${@[i]} == -- ]] && break
        [[ ${@[i]} == -S && -z ${@[i+1]} ]] && nospace=1
      done
      local h; for h in $__hits; do print -r -- "<<C:$h"; done
      (( nospace )) && print -r -- "<<F:nospace"
      builtin compadd "$@"
    }
    print -r -- '<<READY>>'
    SETUP
    zpty z zsh -f -i || exit 2
    zpty -w z "source ${(q)setup}"
    zpty -r -m z out '*<<READY>>*' || { print -u2 'error: zsh did not start'; exit 2 }
    for line in "$@"; do
      print -r -- "<<<$line"
      zpty -w -n z "$line"$'\t'
      zpty -r -m z out '*<<END>>*' || { print -u2 "error: no completion for: $line"; exit 2 }
      for l in ${(f)out}; do
        l=${l%$'\r'}
        [[ $l == *'<<C:'* ]] && print -r -- "C:${l#*<<C:}"
        [[ $l == *'<<F:nospace'* ]] && print -r -- "F:nospace"
      done
      print -r -- ">>>"
      zpty -w -n z $'\C-u'
    done
    zpty -d z
    rm -f $setup
    """#

    static let fish = #"""
    # usage: fish --no-config harness.fish COMPLETION_SCRIPT LINE...
    source $argv[1]; or exit 2
    for line in $argv[2..-1]
        echo "<<<$line"
        for c in (complete -C"$line")
            echo "C:"(string split -m1 \t -- $c)[1]
        end
        echo ">>>"
    end
    """#
}
