import Testing
import RTDBTestSupport
@testable import RTDBCore

/// `Query.isAnswered(by:known:)`: when a cached complete window answers another query.
@Suite struct WindowCoverTests {
    typealias B = Query.Bound

    static let scores = Node.object(normalizing: [
        ("bruhathkayosaurus", 55), ("lambeosaurus", 21), ("linhenykus", 80), ("pterodactyl", 93), ("stegosaurus", 5),
        ("triceratops", 22),
    ].map { Node.Entry($0.0, .int($0.1)) })

    func answered(_ asked: Query, by cached: Query, in data: Node = scores) -> Bool {
        asked.isAnswered(by: cached, known: cached.window(of: data))
    }

    @Test("windows and ranges inside a cached one are answered", arguments: [
        // limitToLast(2) inside limitToLast(4), the documentation's dinosaurs.
        (Query(order: .value, limit: .last(2)), Query(order: .value, limit: .last(4))),
        (Query(order: .value, limit: .last(4)), Query(order: .value, limit: .last(4))),
        // A range inside the cached window's stretch (22 … ∞).
        (Query(order: .value, start: B(.int(50))), Query(order: .value, limit: .last(4))),
        (Query(order: .value, start: B(.int(22), key: "triceratops")), Query(order: .value, limit: .last(4))),
        // The first two of the top four.
        (Query(order: .value, start: B(.int(30)), limit: .first(2)), Query(order: .value, limit: .last(4))),
        // A range inside a cached range; a limit inside it.
        (Query(order: .value, start: B(.int(10)), end: B(.int(60))), Query(order: .value, start: B(.int(5)), end: B(.int(80)))),
        (Query(order: .value, start: B(.int(10)), end: B(.int(60)), limit: .last(1)), Query(order: .value, start: B(.int(5)), end: B(.int(80)))),
        (Query(order: .value, end: B(.int(21))), Query(order: .value, limit: .first(3))),
        // Key order.
        (Query(start: B(.string("p"))), Query(start: B(.string("l")))),
        (Query(start: B(.string("l")), limit: .first(2)), Query(limit: .first(4))),
        (Query(limit: .last(1)), Query(start: B(.string("s")))),
        // A limit whose own end lies inside, with enough children in the stretch.
        (Query(order: .value, limit: .last(3)), Query(order: .value, start: B(.int(50)))),
    ])
    func contained(_ asked: Query, _ cached: Query) {
        #expect(answered(asked, by: cached))
        #expect(asked.window(of: Node.object(normalizing: cached.window(of: WindowCoverTests.scores))).map(\.key)
                == asked.window(of: WindowCoverTests.scores).map(\.key))
    }

    @Test("windows reaching outside a cached one are not", arguments: [
        (Query(order: .value, limit: .last(6)), Query(order: .value, limit: .last(4))),
        (Query(order: .value, limit: .first(1)), Query(order: .value, limit: .last(4))),
        (Query(order: .value, start: B(.int(10))), Query(order: .value, limit: .last(4))),
        // Another order.
        (Query(order: .priority, limit: .last(2)), Query(order: .value, limit: .last(4))),
        (Query(limit: .last(2)), Query(order: .value, limit: .last(4))),
        (Query(order: .child(Path(validatedKeys: ["a"])), limit: .last(2)), Query(order: .child(Path(validatedKeys: ["b"])), limit: .last(4))),
        // A range sticking out of a cached range, at either end.
        (Query(order: .value, start: B(.int(4)), end: B(.int(60))), Query(order: .value, start: B(.int(5)), end: B(.int(80)))),
        (Query(order: .value, start: B(.int(5), exclusive: true), end: B(.int(81))), Query(order: .value, start: B(.int(5)), end: B(.int(80)))),
        (Query(order: .value, start: B(.int(5))), Query(order: .value, start: B(.int(5), key: "s"))),
        // Too few children inside to fill the limit from the inner end.
        (Query(order: .value, limit: .last(4)), Query(order: .value, start: B(.int(50)))),
        // A zero limit says nothing about the range.
        (Query(order: .value, limit: .last(0)), Query(order: .value, limit: .last(0))),
    ])
    func notContained(_ asked: Query, _ cached: Query) {
        #expect(!answered(asked, by: cached))
    }

    /// Known children whose values moved since they were stored no longer fit their window:
    /// nothing is answered from them.
    @Test func childrenThatNoLongerFitAnswerNothing() {
        let cached = Query(order: .value, start: B(.int(50)), limit: .first(2))
        var known = cached.window(of: WindowCoverTests.scores)
        #expect(Query(order: .value, start: B(.int(50)), limit: .first(1)).isAnswered(by: cached, known: known))
        known[0].node = .int(1)
        #expect(!Query(order: .value, start: B(.int(50)), limit: .first(1)).isAnswered(by: cached, known: known))
    }

    /// Whenever a cached window is said to answer a query, the query's window over the cached
    /// children is the one over all the data: random data and random query pairs of each order.
    @Test func anAnswerFromACachedWindowIsTheAnswerFromTheData() {
        var random = SeededRandom(state: 7)
        var answeredCount = 0
        for _ in 0..<4000 {
            let data = Node.object(normalizing: (0..<random.below(12)).map { i in
                var v: Node = random.below(4) == 0 ? .string(["a", "b", "c"][random.below(3)]) : .int(Int64(random.below(6)))
                if random.below(3) == 0 { v = .object([Node.Entry("s", v)]) }
                let p: Node = [Node.null, .int(Int64(random.below(3))), .string("p")][random.below(3)]
                return Node.Entry("k" + String(i * 7 % 12), v.withPriority(p))
            })
            let order = [Query.Order.key, .value, .priority, .child(Path(validatedKeys: ["s"]))][random.below(4)]
            let cached = random.query(order), asked = random.query(order)
            guard (try? cached.validate()) != nil, (try? asked.validate()) != nil else { continue }
            let known = cached.window(of: data)
            guard asked.isAnswered(by: cached, known: known) else { continue }
            answeredCount += 1
            #expect(asked.window(of: Node.object(normalizing: known)).map(\.key) == asked.window(of: data).map(\.key),
                    "\(asked) by \(cached) over \(JSONWriter.string(data, export: true))")
        }
        #expect(answeredCount > 300, "too few pairs were answered to tell anything: \(answeredCount)")
    }
}

/// Random queries for the property test.
extension SeededRandom {
    /// A query of `order` with random bounds (with or without a key, inclusive or not) and limit.
    mutating func query(_ order: Query.Order) -> Query {
        var q = Query(order: order)
        func bound(_ s: inout SeededRandom) -> Query.Bound? {
            guard s.below(2) == 0 else { return nil }
            let value: Node
            if case .key = order {
                value = .string("k" + String(s.below(12)))
            } else {
                value = [Node.null, .int(Int64(s.below(6))), .string(["a", "b", "c", "p"][s.below(4)])][s.below(3)]
            }
            let key: String? = { if case .key = order { return nil } else { return s.below(3) == 0 ? "k" + String(s.below(12)) : nil } }()
            return Query.Bound(value, key: key, exclusive: s.below(3) == 0)
        }
        q.start = bound(&self)
        q.end = bound(&self)
        switch below(3) {
        case 0: q.limit = .first(below(5))
        case 1: q.limit = .last(below(5))
        default: break
        }
        return q
    }
}
