import Testing
import RTDBTestSupport
@testable import RTDBCore

// MARK: - Scenario table helpers

/// One expected event: type, key, prev key and the value as JSON text.
struct EGExpectedEvent: Sendable {
    let type: EventType
    let key: String?
    let prev: String?
    let json: String
}

private func added(_ key: String, _ prev: String?, _ json: String) -> EGExpectedEvent {
    EGExpectedEvent(type: .childAdded, key: key, prev: prev, json: json)
}
private func removed(_ key: String, _ json: String) -> EGExpectedEvent {
    EGExpectedEvent(type: .childRemoved, key: key, prev: nil, json: json)
}
private func changed(_ key: String, _ prev: String?, _ json: String) -> EGExpectedEvent {
    EGExpectedEvent(type: .childChanged, key: key, prev: prev, json: json)
}
private func moved(_ key: String, _ prev: String?, _ json: String) -> EGExpectedEvent {
    EGExpectedEvent(type: .childMoved, key: key, prev: prev, json: json)
}
private func value(_ json: String) -> EGExpectedEvent {
    EGExpectedEvent(type: .value, key: nil, prev: nil, json: json)
}

enum EGMode: Sendable { case child, value }

struct EGScenario: Sendable, CustomTestStringConvertible {
    let name: String
    let query: Query
    /// nil: the scenario checks the initial events for `new`.
    let old: String?
    let new: String
    let mode: EGMode
    let expected: [EGExpectedEvent]
    var testDescription: String { name }
}

private func change(_ name: String, _ query: Query, _ mode: EGMode, _ old: String, _ new: String,
                    _ expected: [EGExpectedEvent]) -> EGScenario {
    EGScenario(name: name, query: query, old: old, new: new, mode: mode, expected: expected)
}
private func initial(_ name: String, _ query: Query, _ mode: EGMode, _ value: String,
                     _ expected: [EGExpectedEvent]) -> EGScenario {
    EGScenario(name: name, query: query, old: nil, new: value, mode: mode, expected: expected)
}

private let byKey = Query()
private let byValue = Query(order: .value)
private let byPriority = Query(order: .priority)
private func byChild(_ path: String) -> Query {
    Query(order: .child(Path(validatedKeys: path.split(separator: "/").map(String.init))))
}

extension Query {
    fileprivate func egStartAt(_ v: Node, _ key: String? = nil) -> Query {
        var q = self; q.start = Bound(v, key: key); return q
    }
    fileprivate func egStartAfter(_ v: Node, _ key: String? = nil) -> Query {
        var q = self; q.start = Bound(v, key: key, exclusive: true); return q
    }
    fileprivate func egEndAt(_ v: Node, _ key: String? = nil) -> Query {
        var q = self; q.end = Bound(v, key: key); return q
    }
    fileprivate func egEndBefore(_ v: Node, _ key: String? = nil) -> Query {
        var q = self; q.end = Bound(v, key: key, exclusive: true); return q
    }
    fileprivate func egEqualTo(_ v: Node, _ key: String? = nil) -> Query {
        egStartAt(v, key).egEndAt(v, key)
    }
    fileprivate func egFirst(_ n: Int) -> Query { var q = self; q.limit = .first(n); return q }
    fileprivate func egLast(_ n: Int) -> Query { var q = self; q.limit = .last(n); return q }
}

/// Renders an event as one ASCII line (non-ASCII scalars escaped) so that comparing lines is
/// byte exact even though Swift's `String ==` is canonical equivalence.
private func line(_ type: EventType, _ key: String?, _ prev: String?, _ node: Node) -> String {
    let k = key.map { "\"\($0)\"" } ?? "nil"
    let p = prev.map { "\"\($0)\"" } ?? "nil"
    let text = "\(type.rawValue) key=\(k) prev=\(p) \(JSONWriter.string(node))"
    var out = ""
    for s in text.unicodeScalars {
        if s.isASCII { out.unicodeScalars.append(s) } else { out += "\\u{\(String(s.value, radix: 16))}" }
    }
    return out
}

private func lines(_ events: [Event]) -> [String] {
    events.map { line($0.type, $0.key, $0.prevKey, $0.value) }
}

private func parse(_ json: String) throws -> Node { try JSONReader.parse(json) }

private func run(_ s: EGScenario, changedKeys: [String]? = nil) throws -> [Event] {
    let new = try parse(s.new)
    guard let oldText = s.old else {
        return EventGenerator.initial(query: s.query, value: new, childEvents: s.mode == .child)
    }
    return EventGenerator.changes(query: s.query, old: try parse(oldText), new: new,
                                  childEvents: s.mode == .child, changedKeys: changedKeys)
}

/// The exact set of child keys whose values differ between two nodes.
private func differingKeys(_ old: Node, _ new: Node) -> [String] {
    var keys: [String] = []
    for e in old.children where !e.node.same(as: new.child(e.key)) { keys.append(e.key) }
    for e in new.children where old.child(e.key).isNull { keys.append(e.key) }
    return keys
}

// MARK: - The scenario table

private let decomposedE = "e\u{301}"   // "é" as e + combining acute: a different key from U+00E9

let egScenarios: [EGScenario] = [
    // Key ordering
    change("key order: int keys first, numerically", byKey, .child,
           #"null"#, #"{"b":1,"10":2,"9":3,"a":4}"#,
           [added("9", nil, "3"), added("10", "9", "2"), added("a", "10", "4"), added("b", "a", "1")]),
    change("key order: 7 < 07 < 007 < 8", byKey, .child,
           #"{"7":"x"}"#, #"{"7":"x","07":"y","007":"z","8":"w"}"#,
           [added("07", "7", #""y""#), added("007", "07", #""z""#), added("8", "007", #""w""#)]),
    initial("key order: UTF-16 code units, non-int32 digits are strings", byKey, .child,
            #"{"😀":1,"～":2,"a":3,"Z":4,"2147483648":5,"-":6}"#,
            [added("-", nil, "6"), added("2147483648", "-", "5"), added("Z", "2147483648", "4"),
             added("a", "Z", "3"), added("😀", "a", "1"), added("～", "😀", "2")]),
    change("key order: deleting the location removes children in key order (-5, 0, -0, x)", byKey, .child,
           #"{"x":1,"0":{"v":1},"-0":2,"-5":3}"#, #"null"#,
           [removed("-5", "3"), removed("0", #"{"v":1}"#), removed("-0", "2"), removed("x", "1")]),
    change("key order: byte-distinct é spellings are distinct keys", byKey, .child,
           "{\"\u{E9}\":1}", "{\"\u{E9}\":1,\"\(decomposedE)\":2}",
           [added(decomposedE, nil, "2")]),

    // Value ordering
    initial("orderByValue: type ranks, numbers, strings by code unit, objects last", byValue, .child,
            #"{"a":"x","b":true,"c":3,"d":false,"e":{"z":1},"f":2.5,"g":"X","h":-1}"#,
            [added("d", nil, "false"), added("b", "d", "true"), added("h", "b", "-1"),
             added("f", "h", "2.5"), added("c", "f", "3"), added("g", "c", #""X""#),
             added("a", "g", #""x""#), added("e", "a", #"{"z":1}"#)]),
    initial("orderByValue: equal values tie by key, 1 == 1.0", byValue, .child,
            #"{"b":1,"a":1,"10":1,"c":1.0}"#,
            [added("10", nil, "1"), added("a", "10", "1"), added("b", "a", "1"), added("c", "b", "1")]),
    change("orderByValue: child_moved even though the position is unchanged", byValue, .child,
           #"{"a":1,"b":5,"c":10}"#, #"{"a":1,"b":6,"c":10}"#,
           [moved("b", "a", "6"), changed("b", "a", "6")]),
    change("orderByValue: moved past a sibling, prev from the new view", byValue, .child,
           #"{"a":1,"b":5,"c":10}"#, #"{"a":11,"b":5,"c":10}"#,
           [moved("a", "c", "11"), changed("a", "c", "11")]),
    change("orderByValue: objects sort equal, yet a changed object child moves", byValue, .child,
           #"{"a":{"x":1},"b":{"x":2}}"#, #"{"a":{"x":3},"b":{"x":2}}"#,
           [moved("a", nil, #"{"x":3}"#), changed("a", nil, #"{"x":3}"#)]),
    change("orderByValue: an int replaced by the equal double is no change", byValue, .child,
           #"{"a":1,"b":2}"#, #"{"a":1.0,"b":2}"#, []),

    // orderByChild
    initial("orderByChild: missing first, ranks, ties by key", byChild("h"), .child,
            #"{"p":{"h":2},"q":{"h":"m"},"r":{"k":1},"s":{"h":false},"t":{"h":2},"1":{"h":2},"u":{"h":{"x":1}},"v":7}"#,
            [added("r", nil, #"{"k":1}"#), added("v", "r", "7"), added("s", "v", #"{"h":false}"#),
             added("1", "s", #"{"h":2}"#), added("p", "1", #"{"h":2}"#), added("t", "p", #"{"h":2}"#),
             added("q", "t", #"{"h":"m"}"#), added("u", "q", #"{"h":{"x":1}}"#)]),
    initial("orderByChild a/b: nested path, primitive parent counts as missing", byChild("a/b"), .child,
            #"{"x":{"a":{"b":3}},"y":{"a":{"b":1}},"z":{"a":5}}"#,
            [added("z", nil, #"{"a":5}"#), added("y", "z", #"{"a":{"b":1}}"#), added("x", "y", #"{"a":{"b":3}}"#)]),
    change("orderByChild a/b: a deep change moves the child", byChild("a/b"), .child,
           #"{"x":{"a":{"b":3}},"y":{"a":{"b":1}},"z":{"a":5}}"#,
           #"{"x":{"a":{"b":3}},"y":{"a":{"b":4}},"z":{"a":5}}"#,
           [moved("y", "x", #"{"a":{"b":4}}"#), changed("y", "x", #"{"a":{"b":4}}"#)]),
    change("orderByChild: a change outside the index child is changed only", byChild("s"), .child,
           #"{"a":{"s":1,"n":"x"},"b":{"s":2,"n":"y"}}"#, #"{"a":{"s":1,"n":"x"},"b":{"s":2,"n":"z"}}"#,
           [changed("b", "a", #"{"s":2,"n":"z"}"#)]),
    change("orderByChild: losing the index child moves it first", byChild("s"), .child,
           #"{"a":{"s":1},"b":{"s":2,"t":0}}"#, #"{"a":{"s":1},"b":{"t":0}}"#,
           [moved("b", nil, #"{"t":0}"#), changed("b", nil, #"{"t":0}"#)]),
    change("orderByChild: swapped sort values, prev keys after the moves", byChild("s"), .child,
           #"{"a":{"s":1},"b":{"s":2},"c":{"s":3}}"#, #"{"a":{"s":3},"b":{"s":2},"c":{"s":1}}"#,
           [moved("c", nil, #"{"s":1}"#), moved("a", "b", #"{"s":3}"#),
            changed("c", nil, #"{"s":1}"#), changed("a", "b", #"{"s":3}"#)]),

    // When child_moved is raised, by the index's own rule (as the SDKs' indexedValueChanged):
    // value order, any change that is not deep-equal; child and priority order, a sort value
    // that compares differently; key order, never.
    change("moved rule: an object child changing under value order moves, same prev", byValue, .child,
           #"{"a":{"x":5},"b":1}"#, #"{"a":{"x":13},"b":1}"#,
           [moved("a", "b", #"{"x":13}"#), changed("a", "b", #"{"x":13}"#)]),
    change("moved rule: an object child gaining a key under value order moves", byValue, .child,
           #"{"a":{"x":5},"b":{"y":1}}"#, #"{"a":{"x":5,"z":true},"b":{"y":1}}"#,
           [moved("a", nil, #"{"x":5,"z":true}"#), changed("a", nil, #"{"x":5,"z":true}"#)]),
    change("moved rule: an object at the child path changing inside is changed only", byChild("m"), .child,
           #"{"a":{"m":{"x":1}},"b":{"m":{"x":2}}}"#, #"{"a":{"m":{"x":1}},"b":{"m":{"x":7}}}"#,
           [changed("b", "a", #"{"m":{"x":7}}"#)]),
    change("moved rule: an object-valued index child {y:2} -> {y:3} is changed only", byChild("x"), .child,
           #"{"a":{"x":{"y":2}},"b":{"x":1}}"#, #"{"a":{"x":{"y":3}},"b":{"x":1}}"#,
           [changed("a", "b", #"{"x":{"y":3}}"#)]),
    change("moved rule: an object-valued index child gaining a key is changed only", byChild("x"), .child,
           #"{"a":{"x":{"y":2}}}"#, #"{"a":{"x":{"y":2,"z":1}}}"#,
           [changed("a", nil, #"{"x":{"y":2,"z":1}}"#)]),
    change("moved rule: an object at the child path turning primitive moves", byChild("x"), .child,
           #"{"a":{"x":{"y":2}},"b":{"x":1}}"#, #"{"a":{"x":5},"b":{"x":1}}"#,
           [moved("a", "b", #"{"x":5}"#), changed("a", "b", #"{"x":5}"#)]),
    change("moved rule: a primitive at the child path turning into an object moves", byChild("x"), .child,
           #"{"a":{"x":5},"b":{"x":1}}"#, #"{"a":{"x":{"y":2}},"b":{"x":1}}"#,
           [moved("a", "b", #"{"x":{"y":2}}"#), changed("a", "b", #"{"x":{"y":2}}"#)]),
    change("moved rule: a string at the child path changing moves", byChild("x"), .child,
           #"{"a":{"x":"m"},"b":{"x":"z"}}"#, #"{"a":{"x":"n"},"b":{"x":"z"}}"#,
           [moved("a", nil, #"{"x":"n"}"#), changed("a", nil, #"{"x":"n"}"#)]),
    change("moved rule: a priority change under child order is changed only", byChild("x"), .child,
           #"{"a":{"x":1,".priority":1},"b":{"x":2}}"#, #"{"a":{"x":1,".priority":2},"b":{"x":2}}"#,
           [changed("a", nil, #"{"x":1}"#)]),
    change("moved rule: an int priority replaced by the equal double is changed only", byPriority, .child,
           #"{"a":{"x":1,".priority":1},"b":{"x":2,".priority":2}}"#, #"{"a":{"x":3,".priority":1.0},"b":{"x":2,".priority":2}}"#,
           [changed("a", nil, #"{"x":3}"#)]),
    change("moved rule: a string priority changing moves", byPriority, .child,
           #"{"a":{".value":1,".priority":"m"},"b":{".value":2,".priority":"z"}}"#,
           #"{"a":{".value":1,".priority":"n"},"b":{".value":2,".priority":"z"}}"#,
           [moved("a", nil, "1"), changed("a", nil, "1")]),
    change("moved rule: under value order an int replaced by the equal double is no change", byValue, .child,
           #"{"a":1,"b":2}"#, #"{"a":1.0,"b":2}"#, []),
    change("moved rule: a primitive at the child path changing in place moves", byChild("s"), .child,
           #"{"a":{"s":1},"b":{"s":5},"c":{"s":9}}"#, #"{"a":{"s":1},"b":{"s":6},"c":{"s":9}}"#,
           [moved("b", "a", #"{"s":6}"#), changed("b", "a", #"{"s":6}"#)]),
    change("moved rule: a primitive child changing in place under value order moves", byValue, .child,
           #"{"a":"p","b":"q","c":"z"}"#, #"{"a":"p","b":"r","c":"z"}"#,
           [moved("b", "a", #""r""#), changed("b", "a", #""r""#)]),
    change("moved rule: key order never moves", byKey, .child,
           #"{"a":{"x":1},"b":2,"c":"s"}"#, #"{"a":{"x":2},"b":3,"c":"t"}"#,
           [changed("a", nil, #"{"x":2}"#), changed("b", "a", "3"), changed("c", "b", #""t""#)]),
    change("moved rule: a change beside an object at the child path is changed only", byChild("m"), .child,
           #"{"a":{"m":{"x":1},"n":1},"b":{"m":{"x":2}}}"#, #"{"a":{"m":{"x":1},"n":2},"b":{"m":{"x":2}}}"#,
           [changed("a", nil, #"{"m":{"x":1},"n":2}"#)]),
    change("moved rule: int replaced by the equal double at the child path is changed only", byChild("s"), .child,
           #"{"a":{"s":1,"t":1},"b":{"s":2}}"#, #"{"a":{"s":1.0,"t":2},"b":{"s":2}}"#,
           [changed("a", nil, #"{"s":1,"t":2}"#)]),

    // Priorities (values print without them; Node.same compares them)
    initial("orderByPriority: none first, numbers, then strings, ties by key", byPriority, .child,
            #"{"a":{".value":1,".priority":"b"},"b":{".value":2,".priority":3},"c":4,"d":{"x":1,".priority":-1.5},"e":{".value":5,".priority":"a"},"f":{".value":6,".priority":3},"1":7}"#,
            [added("1", nil, "7"), added("c", "1", "4"), added("d", "c", #"{"x":1}"#), added("b", "d", "2"),
             added("f", "b", "6"), added("e", "f", "5"), added("a", "e", "1")]),
    change("orderByPriority: a new priority moves the child, value unchanged", byPriority, .child,
           #"{"a":{".value":1,".priority":1},"b":{".value":2,".priority":2}}"#,
           #"{"a":{".value":1,".priority":3},"b":{".value":2,".priority":2}}"#,
           [moved("a", "b", "1"), changed("a", "b", "1")]),
    change("orderByPriority: a value change with the same priority is changed only", byPriority, .child,
           #"{"a":{".value":1,".priority":1},"b":{".value":2,".priority":2}}"#,
           #"{"a":{".value":9,".priority":1},"b":{".value":2,".priority":2}}"#,
           [changed("a", nil, "9")]),
    change("orderByPriority: losing the priority moves the child first", byPriority, .child,
           #"{"a":{".value":1,".priority":1},"b":{"x":2,".priority":2}}"#,
           #"{"a":{".value":1,".priority":1},"b":{"x":2}}"#,
           [moved("b", nil, #"{"x":2}"#), changed("b", nil, #"{"x":2}"#)]),
    change("orderByPriority startAt 2: a child whose priority rises into the range is added", byPriority.egStartAt(.int(2)), .child,
           #"{"a":{".value":1,".priority":1},"b":{".value":2,".priority":2}}"#,
           #"{"a":{".value":1,".priority":5},"b":{".value":2,".priority":2}}"#,
           [added("a", "b", "1")]),
    change("orderByPriority limitToFirst 1: a priority change swaps the window", byPriority.egFirst(1), .child,
           #"{"a":{".value":1,".priority":1},"b":{".value":2,".priority":2}}"#,
           #"{"a":{".value":1,".priority":3},"b":{".value":2,".priority":2}}"#,
           [removed("a", "1"), added("b", nil, "2")]),
    change("key order: a priority-only change is a change", byKey, .child,
           #"{"a":1,"b":2}"#, #"{"a":{".value":1,".priority":"p"},"b":2}"#,
           [changed("a", nil, "1")]),
    change("orderByValue: a priority-only change of a child is a move", byValue, .child,
           #"{"a":1,"b":2}"#, #"{"a":{".value":1,".priority":"p"},"b":2}"#,
           [moved("a", nil, "1"), changed("a", nil, "1")]),
    change("value mode: a priority change alone raises value", byKey, .value,
           #"{"a":1}"#, #"{"a":1,".priority":4}"#, [value(#"{"a":1}"#)]),
    change("value mode: a child's priority change raises value", byKey, .value,
           #"{"a":1,"b":2}"#, #"{"a":{".value":1,".priority":4},"b":2}"#, [value(#"{"a":1,"b":2}"#)]),
    change("value mode: a leaf's priority change raises value", byKey, .value,
           #"5"#, #"{".value":5,".priority":1}"#, [value("5")]),
    change("value mode: the location's priority is not part of a filtered window", byKey.egFirst(5), .value,
           #"{"a":1}"#, #"{"a":1,".priority":4}"#, []),

    // Bounds
    change("key range [b, d]: changes outside the range raise nothing", byKey.egStartAt(.string("b")).egEndAt(.string("d")), .child,
           #"{"a":1,"b":2,"c":3,"d":4,"e":5}"#, #"{"a":9,"b":2,"bb":6,"c":30,"d":4,"e":50}"#,
           [added("bb", "b", "6"), changed("c", "bb", "30")]),
    initial("key range: startAt \"10\" excludes \"9\" (numeric keys)", byKey.egStartAt(.string("10")).egEndAt(.string("b")), .child,
            #"{"9":1,"10":2,"11":3,"a":4,"b":5,"c":6}"#,
            [added("10", nil, "2"), added("11", "10", "3"), added("a", "11", "4"), added("b", "a", "5")]),
    change("key range: startAfter a, endBefore d", byKey.egStartAfter(.string("a")).egEndBefore(.string("d")), .child,
           #"{"a":1,"b":2,"c":3,"d":4}"#, #"{"a":1,"a0":6,"b":2,"c":3,"cc":5,"d":4}"#,
           [added("a0", nil, "6"), added("cc", "c", "5")]),
    initial("orderByValue egStartAt(2) includes every child equal to 2", byValue.egStartAt(.int(2)), .child,
            #"{"a":1,"b":2,"c":2,"d":3}"#,
            [added("b", nil, "2"), added("c", "b", "2"), added("d", "c", "3")]),
    initial("orderByValue egStartAt(2, \"c\") keeps keys >= c among the 2s", byValue.egStartAt(.int(2), "c"), .child,
            #"{"a":1,"b":2,"c":2,"d":3}"#,
            [added("c", nil, "2"), added("d", "c", "3")]),
    change("orderByValue egStartAfter(2) skips all 2s; a child crossing the bound is added", byValue.egStartAfter(.int(2)), .child,
           #"{"a":1,"b":2,"c":2,"d":3}"#, #"{"a":1,"b":2,"c":2.5,"d":3}"#,
           [added("c", nil, "2.5")]),
    initial("orderByValue egStartAfter(2, \"b\") excludes exactly (2, b)", byValue.egStartAfter(.int(2), "b"), .child,
            #"{"a":1,"b":2,"c":2,"d":3}"#,
            [added("c", nil, "2"), added("d", "c", "3")]),
    initial("orderByValue egEndAt(2, \"b\")", byValue.egEndAt(.int(2), "b"), .child,
            #"{"a":1,"b":2,"c":2,"d":3}"#,
            [added("a", nil, "1"), added("b", "a", "2")]),
    change("orderByValue egEndAt(2): one child leaves, another enters", byValue.egEndAt(.int(2)), .child,
           #"{"a":1,"b":2,"c":2,"d":3}"#, #"{"a":1,"b":2,"c":3,"d":2}"#,
           [removed("c", "2"), added("d", "b", "2")]),
    initial("orderByValue egEndBefore(2) skips all 2s", byValue.egEndBefore(.int(2)), .child,
            #"{"a":1,"b":2,"c":2,"d":3}"#,
            [added("a", nil, "1")]),
    initial("orderByValue egEndBefore(2, \"c\") excludes exactly (2, c) and after", byValue.egEndBefore(.int(2), "c"), .child,
            #"{"a":1,"b":2,"c":2,"d":3}"#,
            [added("a", nil, "1"), added("b", "a", "2")]),
    change("orderByChild egEqualTo(\"x\"): removed, added, changed", byChild("type").egEqualTo(.string("x")), .child,
           #"{"a":{"type":"x"},"b":{"type":"y"},"c":{"type":"x"}}"#,
           #"{"a":{"type":"y"},"b":{"type":"x"},"c":{"type":"x","n":1}}"#,
           [removed("a", #"{"type":"x"}"#), added("b", nil, #"{"type":"x"}"#),
            changed("c", "b", #"{"type":"x","n":1}"#)]),
    change("orderByChild egEqualTo(null) shows children lacking the child", byChild("tag").egEqualTo(.null), .child,
           #"{"a":{"tag":1},"b":{"n":1},"c":{"n":2}}"#, #"{"a":{"n":0},"b":{"n":1,"tag":true},"c":{"n":2}}"#,
           [removed("b", #"{"n":1}"#), added("a", nil, #"{"n":0}"#)]),
    initial("orderByValue egEqualTo(5, \"b\") shows only b", byValue.egEqualTo(.int(5), "b"), .child,
            #"{"a":5,"b":5,"c":5}"#, [added("b", nil, "5")]),

    // Limits
    change("limitToLast 2 over a,b,c: deleting b pulls in a", byKey.egLast(2), .child,
           #"{"a":1,"b":2,"c":3}"#, #"{"a":1,"c":3}"#,
           [removed("b", "2"), added("a", nil, "1")]),
    change("limitToLast 2 over a,b,c: deleting b, value mode", byKey.egLast(2), .value,
           #"{"a":1,"b":2,"c":3}"#, #"{"a":1,"c":3}"#,
           [value(#"{"a":1,"c":3}"#)]),
    change("limitToFirst 2: a change outside the window raises nothing", byKey.egFirst(2), .child,
           #"{"a":1,"b":2,"c":3,"d":4}"#, #"{"a":1,"b":2,"c":3,"d":40}"#, []),
    change("limitToFirst 2: an insert inside pushes the boundary out", byKey.egFirst(2), .child,
           #"{"a":1,"b":2,"c":3,"d":4}"#, #"{"a":1,"aa":5,"b":2,"c":3,"d":4}"#,
           [removed("b", "2"), added("aa", "a", "5")]),
    change("limitToFirst 2: deleting the first pulls the next in", byKey.egFirst(2), .child,
           #"{"a":1,"b":2,"c":3}"#, #"{"b":2,"c":3}"#,
           [removed("a", "1"), added("c", "b", "3")]),
    change("limitToFirst 2: deleting outside the window raises nothing", byKey.egFirst(2), .child,
           #"{"a":1,"b":2,"c":3}"#, #"{"a":1,"b":2}"#, []),
    change("limitToLast 2 orderByValue: a child from outside enters past the boundary", byValue.egLast(2), .child,
           #"{"a":1,"b":2,"c":3,"d":4}"#, #"{"a":10,"b":2,"c":3,"d":4}"#,
           [removed("c", "3"), added("a", "d", "10")]),
    change("limitToLast 2 orderByValue: a child inside moves within the window", byValue.egLast(2), .child,
           #"{"a":1,"b":2,"c":3,"d":4}"#, #"{"a":1,"b":2,"c":5,"d":4}"#,
           [moved("c", "d", "5"), changed("c", "d", "5")]),
    change("limitToFirst 2 orderByChild: a child sorting past the candidate leaves", byChild("score").egFirst(2), .child,
           #"{"a":{"score":1},"b":{"score":2},"c":{"score":3}}"#, #"{"a":{"score":4},"b":{"score":2},"c":{"score":3}}"#,
           [removed("a", #"{"score":1}"#), added("c", "b", #"{"score":3}"#)]),
    change("limitToFirst 2 orderByValue: a change outside the window raises nothing", byValue.egFirst(2), .child,
           #"{"a":1,"b":2,"c":3}"#, #"{"a":1,"b":2,"c":3.5}"#, []),
    change("limitToLast 3 not full: behaves like a plain add", byKey.egLast(3), .child,
           #"{"a":1}"#, #"{"a":1,"b":2}"#, [added("b", "a", "2")]),
    change("startAt b + limitToFirst 2: deleting inside pulls in the next in range", byKey.egStartAt(.string("b")).egFirst(2), .child,
           #"{"a":1,"b":2,"c":3,"d":4}"#, #"{"a":1,"c":3,"d":4}"#,
           [removed("b", "2"), added("d", "c", "4")]),
    change("limitToFirst 0 shows nothing", byKey.egFirst(0), .child,
           #"{"a":1}"#, #"{"a":2,"b":3}"#, []),

    // Several children in one operation
    change("key order: removed, then added, then changed, each in key order", byKey, .child,
           #"{"a":1,"b":2,"c":3,"d":4}"#, #"{"0":0,"b":20,"c":3,"d":40,"e":5}"#,
           [removed("a", "1"), added("0", nil, "0"), added("e", "d", "5"),
            changed("b", "0", "20"), changed("d", "c", "40")]),
    change("orderByValue: removed in old order, then added, moved, changed in new order", byValue, .child,
           #"{"g":-1,"a":1,"b":2,"c":3,"d":4,"e":5}"#, #"{"b":2,"c":30,"d":0,"e":5,"f":3}"#,
           [removed("g", "-1"), removed("a", "1"), added("f", "b", "3"),
            moved("d", nil, "0"), moved("c", "e", "30"),
            changed("d", nil, "0"), changed("c", "e", "30")]),

    // Whole location, primitives, no-op writes
    change("deleting the watched location removes every child", byKey, .child,
           #"{"a":1,"b":{"x":2}}"#, #"null"#, [removed("a", "1"), removed("b", #"{"x":2}"#)]),
    change("deleting the watched location, value mode", byKey, .value,
           #"{"a":1,"b":{"x":2}}"#, #"null"#, [value("null")]),
    change("a parent overwritten by a primitive removes its children", byKey, .child,
           #"{"a":1,"b":2}"#, #""hello""#, [removed("a", "1"), removed("b", "2")]),
    change("a parent overwritten by a primitive, value mode", byKey, .value,
           #"{"a":1,"b":2}"#, #""hello""#, [value(#""hello""#)]),
    change("primitive to primitive raises no child events", byKey, .child, "5", "6", []),
    change("primitive to primitive, value mode", byKey, .value, "5", "6", [value("6")]),
    change("primitive to object adds the children", byKey, .child,
           "5", #"{"a":1,"b":2}"#, [added("a", nil, "1"), added("b", "a", "2")]),
    change("a write that changes nothing raises nothing (child mode)", byChild("s"), .child,
           #"{"a":{"s":1,"t":[1,2]},"b":"x"}"#, #"{"b":"x","a":{"t":[1,2],"s":1}}"#, []),
    change("a write that changes nothing raises nothing (value mode)", byKey, .value,
           #"{"a":{"s":1,"t":[1,2]},"b":"x"}"#, #"{"b":"x","a":{"t":[1,2],"s":1}}"#, []),

    // Value mode
    change("value mode: limitToFirst 2 carries the window after a change inside", byKey.egFirst(2), .value,
           #"{"a":1,"b":2,"c":3}"#, #"{"a":1,"b":20,"c":3}"#, [value(#"{"a":1,"b":20}"#)]),
    change("value mode: limitToFirst 2, a change outside the window raises nothing", byKey.egFirst(2), .value,
           #"{"a":1,"b":2,"c":3}"#, #"{"a":1,"b":2,"c":30}"#, []),
    change("value mode: a deep nested change raises the whole value", byKey, .value,
           #"{"a":{"b":{"c":1}},"d":1}"#, #"{"a":{"b":{"c":2}},"d":1}"#, [value(#"{"a":{"b":{"c":2}},"d":1}"#)]),
    change("value mode: a reorder inside a limitToLast window raises value", byValue.egLast(2), .value,
           #"{"a":1,"b":2,"c":3}"#, #"{"a":1,"b":4,"c":3}"#, [value(#"{"b":4,"c":3}"#)]),
    change("value mode: a change outside a key range raises nothing", byKey.egStartAt(.string("b")), .value,
           #"{"a":1,"b":2}"#, #"{"a":5,"b":2}"#, []),
    change("value mode: orderByChild equalTo, the window empties to null", byChild("t").egEqualTo(.string("x")), .value,
           #"{"a":{"t":"x"},"b":{"t":"y"}}"#, #"{"a":{"t":"z"},"b":{"t":"y"}}"#, [value("null")]),

    // Initial events
    initial("initial value: a missing location gives null", byKey, .value, "null", [value("null")]),
    initial("initial value: the window value", byValue.egFirst(2), .value,
            #"{"a":3,"b":1,"c":2}"#, [value(#"{"b":1,"c":2}"#)]),
    initial("initial value: a primitive location gives the primitive", byKey, .value, "5", [value("5")]),
    initial("initial value: orderByValue without bounds over a primitive gives the primitive", byValue, .value,
            #""s""#, [value(#""s""#)]),
    initial("initial value: a limited query over a primitive shows null", byKey.egFirst(2), .value, "5", [value("null")]),
    initial("initial child events: a primitive has no children", byKey, .child, "5", []),
    initial("initial child events: a missing location has no children", byKey, .child, "null", []),
    initial("initial child events: limitToLast 2, prev chained", byKey.egLast(2), .child,
            #"{"a":1,"b":2,"c":3}"#, [added("b", nil, "2"), added("c", "b", "3")]),
]

// MARK: - Tests

@Suite("EventGenerator")
struct EventGeneratorTests {
    @Test("scenario table is large enough")
    func tableSize() {
        #expect(egScenarios.count >= 40)
    }

    @Test("scenario", arguments: egScenarios)
    func scenario(_ s: EGScenario) throws {
        let expected = try s.expected.map { line($0.type, $0.key, $0.prev, try parse($0.json)) }
        #expect(lines(try run(s)) == expected)
    }

    @Test("changedKeys hint gives the full diff's result", arguments: egScenarios.filter { $0.old != nil })
    func hintMatchesFullDiff(_ s: EGScenario) throws {
        guard let oldText = s.old else { return }
        let old = try parse(oldText), new = try parse(s.new)
        let exact = differingKeys(old, new)
        let superset = exact + exact + (old.children + new.children).map(\.key) + ["not-there", "0", "\u{E9}"]
        for mode in [EGMode.child, .value] {
            let m = EGScenario(name: s.name, query: s.query, old: s.old, new: s.new, mode: mode, expected: [])
            let full = lines(try run(m))
            #expect(lines(try run(m, changedKeys: exact)) == full)
            #expect(lines(try run(m, changedKeys: superset)) == full)
        }
    }

    @Test("a decomposed key in the hint does not stand for the precomposed one")
    func hintIsByteExact() throws {
        let old = try parse("{\"\u{E9}\":1,\"\(decomposedE)\":1}")
        let new = try parse("{\"\u{E9}\":2,\"\(decomposedE)\":1}")
        let events = EventGenerator.changes(query: byKey, old: old, new: new, childEvents: true,
                                            changedKeys: ["\u{E9}"])
        #expect(lines(events) == [line(.childChanged, "\u{E9}", decomposedE, .int(2))])
    }

    @Test("random data: hinted and full diffs agree for every query shape")
    func randomHintedMatchesFull() {
        var rng = SeededRandom(state: 0x5EED_E7E7)
        let keys = ["0", "1", "2", "7", "07", "10", "-3", "a", "b", "c", "\u{E9}", decomposedE, "Z", "😀"]
        let queries: [Query] = [
            byKey, byKey.egStartAt(.string("1")).egEndAt(.string("b")),
            byKey.egStartAfter(.string("07")).egEndBefore(.string("c")),
            byKey.egFirst(3), byKey.egLast(3), byKey.egStartAt(.string("7")).egFirst(2), byKey.egEndAt(.string("b")).egLast(2),
            byKey.egFirst(0), byKey.egLast(100),
            byValue, byValue.egStartAt(.int(2)), byValue.egStartAfter(.int(2), "a").egEndAt(.string("x")),
            byValue.egFirst(3), byValue.egLast(2), byValue.egEndBefore(.bool(true)),
            byChild("s"), byChild("s").egEqualTo(.int(1)), byChild("s").egEqualTo(.null), byChild("s/t").egLast(2),
            byChild("s").egStartAt(.int(1), "b").egFirst(4),
        ]
        func randomValue() -> Node {
            switch rng.below(9) {
            case 0: return .null
            case 1: return .bool(rng.below(2) == 0)
            case 2: return .int(Int64(rng.below(4)))
            case 3: return .double(Double(rng.below(4)) + 0.5)
            case 4: return .string(["x", "y", "X"][rng.below(3)])
            case 5: return .object([Node.Entry("s", .int(Int64(rng.below(3))))])
            case 6: return .object([Node.Entry("s", .object([Node.Entry("t", .int(Int64(rng.below(3))))]))])
            case 7: return .object([Node.Entry("u", .int(1))])
            default: return .int(Int64(rng.below(3)))
            }
        }
        func randomObject() -> Node {
            if rng.below(12) == 0 { return .int(Int64(rng.below(3))) }
            return Node.object(normalizing: keys.map { Node.Entry($0, randomValue()) })
        }
        var checked = 0
        for _ in 0..<400 {
            let old = randomObject()
            var new = old
            if rng.below(15) == 0 {
                new = randomObject()
            } else {
                for _ in 0..<rng.below(4) {
                    new = new.setting(child: keys[rng.below(keys.count)], to: randomValue())
                }
            }
            let hint = differingKeys(old, new)
            for q in queries {
                for child in [true, false] {
                    let full = lines(EventGenerator.changes(query: q, old: old, new: new, childEvents: child))
                    let fast = lines(EventGenerator.changes(query: q, old: old, new: new, childEvents: child,
                                                            changedKeys: hint))
                    #expect(fast == full, "old \(JSONWriter.string(old)) new \(JSONWriter.string(new))")
                    checked += 1
                }
            }
        }
        #expect(checked == 400 * queries.count * 2)
    }

    @Test("initial child events then changes reproduce the new view's keys and values")
    func eventsReplayToNewView() throws {
        // Apply the events to the old view (as a client keyed by name would) and compare with the new view.
        let queries = [byKey, byKey.egLast(2), byValue, byValue.egFirst(3), byChild("s").egEndAt(.int(2))]
        for q in queries {
            for s in egScenarios where s.old != nil {
                guard let oldText = s.old else { continue }
                let old = try parse(oldText), new = try parse(s.new)
                var view: [String: String] = [:]
                func id(_ k: String) -> String { k.unicodeScalars.map { String($0.value, radix: 16) }.joined(separator: ".") }
                for e in EventGenerator.initial(query: q, value: old, childEvents: true) {
                    view[id(e.key ?? "")] = JSONWriter.string(e.value)
                }
                for e in EventGenerator.changes(query: q, old: old, new: new, childEvents: true) {
                    switch e.type {
                    case .childRemoved: view[id(e.key ?? "")] = nil
                    case .childAdded, .childChanged: view[id(e.key ?? "")] = JSONWriter.string(e.value)
                    case .childMoved, .value: break
                    }
                }
                var want: [String: String] = [:]
                for e in q.window(of: new) { want[id(e.key)] = JSONWriter.string(e.node) }
                #expect(view == want, "\(s.name)")
            }
        }
    }

    @Test("100,000 children, one changed: the hinted and full diffs give the right events")
    func largeLocation() throws {
        let count = 100_000
        func key(_ i: Int) -> String {
            let digits = String(i)
            return "k" + String(repeating: "0", count: 6 - digits.count) + digits
        }
        let entries = (0..<count).map { Node.Entry(key($0), .int(Int64($0))) }
        let old = Node.object(normalizing: entries)
        #expect(old.children.count == count)

        // One changed child, plain key order.
        let new = old.setting(child: key(50_000), to: .int(-7))
        let expected = [line(.childChanged, key(50_000), key(49_999), .int(-7))]
        for hint in [[key(50_000)], nil] as [[String]?] {
            let events = EventGenerator.changes(query: byKey, old: old, new: new, childEvents: true, changedKeys: hint)
            #expect(lines(events) == expected)
            let values = EventGenerator.changes(query: byKey, old: old, new: new, childEvents: false, changedKeys: hint)
            #expect(values.count == 1 && values.first?.value.same(as: new) == true)
        }

        // An integer key sorts before every "k…" key; a deletion in the middle.
        let added = old.setting(child: "42", to: .string("n")).setting(child: key(7), to: .null)
        let addEvents = EventGenerator.changes(query: byKey, old: old, new: added, childEvents: true,
                                               changedKeys: ["42", key(7)])
        #expect(lines(addEvents) == [line(.childRemoved, key(7), nil, .int(7)), line(.childAdded, "42", nil, .string("n"))])

        // A write of identical data raises nothing.
        let same = old.setting(child: key(3), to: .int(3))
        #expect(EventGenerator.changes(query: byKey, old: old, new: same, childEvents: true, changedKeys: [key(3)]).isEmpty)
        #expect(EventGenerator.changes(query: byKey, old: old, new: same, childEvents: false, changedKeys: [key(3)]).isEmpty)

        // limitToLast 3: a new last key pushes the first of the window out.
        let grown = old.setting(child: key(count), to: .int(Int64(count)))
        let limited = EventGenerator.changes(query: byKey.egLast(3), old: old, new: grown, childEvents: true,
                                             changedKeys: [key(count)])
        #expect(lines(limited) == [line(.childRemoved, key(count - 3), nil, .int(Int64(count - 3))),
                                   line(.childAdded, key(count), key(count - 1), .int(Int64(count)))])

        // orderByValue without a limit: the changed child moves to the end.
        let bumped = old.setting(child: key(50_000), to: .double(99_999.5))
        let byVal = [line(.childMoved, key(50_000), key(99_999), .double(99_999.5)),
                     line(.childChanged, key(50_000), key(99_999), .double(99_999.5))]
        for hint in [[key(50_000)], nil] as [[String]?] {
            let events = EventGenerator.changes(query: byValue, old: old, new: bumped, childEvents: true, changedKeys: hint)
            #expect(lines(events) == byVal)
        }
    }

    @Test("negative limits do not trap")
    func negativeLimit() throws {
        let old = try parse(#"{"a":1}"#), new = try parse(#"{"a":2}"#)
        #expect(EventGenerator.changes(query: byKey.egFirst(-1), old: old, new: new, childEvents: true).isEmpty)
        #expect(EventGenerator.changes(query: byKey.egLast(-1), old: old, new: new, childEvents: true, changedKeys: ["a"]).isEmpty)
        #expect(lines(EventGenerator.initial(query: byKey.egFirst(-1), value: new, childEvents: false)) == [line(.value, nil, nil, .null)])
    }
}
