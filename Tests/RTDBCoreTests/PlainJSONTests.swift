import Testing
import RTDBCore

/// PlainJSON must agree with JSONReader, Limits and JSONWriter exactly: a document it calls
/// plain is stored leaf by leaf and answered from its text, so any difference would be a
/// difference in what a huge write stores or answers.
private func plain(_ text: String, depth: Int = 0) -> Bool {
    var t = text
    return t.withUTF8 { PlainJSON.isPlain($0, depth: depth) }
}

private func rendered(_ text: String) throws -> String {
    var t = text
    return String(decoding: try t.withUTF8 { try PlainJSON.render($0) }, as: UTF8.self)
}

private func written(_ text: String) throws -> String {
    JSONWriter.string(try JSONReader.parse(text), export: false)
}

struct PlainJSONTests {
    static let plainDocuments = [
        #"{"a":1}"#,
        #"{"b":{"y":true,"x":false},"a":"s"}"#,
        #"{ "z" : 1.50 , "y" : 1e3, "x": -0, "w": 12345678901234567890, "v": 0.1, "u": -7 }"#,
        #"{"0":"a","1":"b","2":"c"}"#,
        #"{"2":"a","5":"b"}"#,
        #"{"0":"a","9":"b"}"#,
        #"{"10":1,"9":2,"-1":3,"a":4,"01":5,"B":6}"#,
        #"{"k\u00e9y":"v\n\"q\"","\u00e9":"\ud83d\ude00","z":"x"}"#,
        #"{"esc\u0041ped":"a\/b","t":"tab\there"}"#,
        #"{"n":{"m":{"o":{"p":"deep"}}},"a":{"1":true,"3":false}}"#,
        // Arrays are stored as the objects of their indices and written back as the same arrays.
        "[1,2]",
        #"{"a":[1]}"#,
        #"{"tags":["a","b"],"k":{"t":["z"]},"score":3}"#,
        #"[{"n":1},{"n":2,"tags":["x"]}]"#,
        #"{"a":["x",{"b":[true,[1,2.5,"q\n"]]}],"c":1}"#,
        #"{"b":[ 1 , [ [ "deep" ] ] ],"a":{"0":[3],"1":[4]}}"#,
        "[" + (0..<12).map(String.init).joined(separator: ",") + "]",
    ]

    @Test(arguments: plainDocuments)
    func plainDocumentsRenderAsTheWriterWould(_ text: String) throws {
        #expect(plain(text))
        #expect(try rendered(text) == (try written(text)))
    }

    static let notPlain = [
        "1", #""s""#, "null", "{}", "[]", "[null]", "[1,null,3]",
        #"{"a":null}"#, #"{"a":{}}"#, #"{"a":[]}"#, #"{"a":[1,null]}"#, #"{"a":[{}]}"#, #"{"a":[[]]}"#,
        #"{"a":[1,]}"#, #"{"a":[1}"#, #"{"a":[{".priority":1,"x":2}]}"#, #"{"a":[1 2]}"#, #"{"a":1,"a":2}"#, #"{"a":{"x":1},"a":{"y":2}}"#,
        #"{"b":1,"a":2,"b":3}"#, #"{"a":1,"c":2,"b":3,"c":4}"#, #"{"2":1,"10":2,"2":3}"#,
        #"{".priority":1,"a":2}"#, #"{".value":1}"#, #"{"a":{".sv":"timestamp"}}"#, #"{"a/b":1}"#, #"{"a.b":1}"#,
        #"{"a":1"#, #"{"a":1}x"#, #"{"a":tru}"#, #"{"a":1e999}"#, #"{"a":"\ud800"}"#, #"{"\u00e9":1,"é":2}"#, #"{"esc\/aped":1}"#,
    ]

    @Test(arguments: notPlain)
    func documentsThatNeedNormalizingAreNotPlain(_ text: String) {
        #expect(!plain(text))
    }

    @Test func depthCountsThePathWrittenAt() {
        let nested = String(repeating: #"{"k":"#, count: 5) + "1" + String(repeating: "}", count: 5)
        #expect(plain(nested, depth: Limits.maxDepth - 5))
        #expect(!plain(nested, depth: Limits.maxDepth - 4))
    }

    /// A PATCH's answer: the members in key order, always an object, values as `render`.
    @Test(arguments: [
        (#"{"b":[1,2],"a":{"y":1,"x":[true]}}"#, #"{"a":{"x":[true],"y":1},"b":[1,2]}"#),
        (#"{"1":"a","0":"b"}"#, #"{"0":"b","1":"a"}"#),
        (#"{"0":"b","1":"a"}"#, #"{"0":"b","1":"a"}"#),
        (#"{"k\u00e9":1,"a":2}"#, #"{"a":2,"ké":1}"#),
    ])
    func membersRenderAsAnObjectInKeyOrder(_ text: String, _ expected: String) throws {
        #expect(plain(text))
        var t = text
        let got = String(decoding: try t.withUTF8 { try PlainJSON.renderMembers($0) }, as: UTF8.self)
        #expect(got == expected)
    }

    /// `rendersAsItself` says yes exactly when the rendering is the text itself, for a PUT's
    /// answer and for a PATCH's members.
    @Test(arguments: plainDocuments + [
        #"{"a":1,"b":"x"}"#, #"{"a":[1,2],"b":{"c":true,"d":-3}}"#, #"{"0":"a","1":"b"}"#, #"{"0":"a","2":"b"}"#,
        #"{"a":1.5,"b":"tab\there"}"#, #"{"a":1.50}"#, #"{"b":1,"a":2}"#, #"{"a":{"1":2,"0":1}}"#, #"{"a":[1]} "#,
    ])
    func aDocumentRendersAsItselfExactlyWhenItsRenderingIsItsText(_ text: String) throws {
        guard plain(text), text.hasPrefix("{") else { return }
        var t = text
        let asPut = try t.withUTF8 { (PlainJSON.rendersAsItself($0, members: false), try PlainJSON.render($0)) }
        #expect(asPut.0 == (asPut.1 == Array(text.utf8)), "\(text) as a PUT")
        let asPatch = try t.withUTF8 { (PlainJSON.rendersAsItself($0, members: true), try PlainJSON.renderMembers($0)) }
        #expect(asPatch.0 == (asPatch.1 == Array(text.utf8)), "\(text) as a PATCH")
    }

    @Test func aGeneratedDocumentIsItsOwnAnswer() {
        let doc = "{" + (1_000..<2_000).map { #""k\#($0)":{"n":\#($0),"tags":["a","b"]}"# }.joined(separator: ",") + "}"
        var t = doc
        #expect(t.withUTF8 { PlainJSON.rendersAsItself($0, members: false) })
        #expect(t.withUTF8 { PlainJSON.rendersAsItself($0, members: true) })
    }

    @Test func arraysCountInTheDepth() {
        let nested = String(repeating: "[", count: 5) + "1" + String(repeating: "]", count: 5)
        #expect(plain(nested, depth: Limits.maxDepth - 5))
        #expect(!plain(nested, depth: Limits.maxDepth - 4))
    }

    @Test func aLongStringIsNotPlain() {
        let long = #"{"a":""# + String(repeating: "x", count: Limits.maxStringBytes + 1) + #""}"#
        #expect(!plain(long))
    }
}
