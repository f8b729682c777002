import Foundation
import Testing

/// increment (increment rules).
@Suite struct IncrementTests {
    @Test func defaultDeltaIsOneAndStartsFromNothing() {
        let sb = Sandbox()
        expectOK(sb.rtdb("increment", "/counter"), "{\"path\":\"/counter\",\"value\":1}\n")
        expectOK(sb.rtdb("increment", "/counter"), "{\"path\":\"/counter\",\"value\":2}\n")
        expectOK(sb.rtdb("increment", "counter/"), "{\"path\":\"/counter\",\"value\":3}\n")
        expectOK(sb.rtdb("get", "/counter"), "3\n")
    }

    @Test func explicitNegativeAndFractionalDeltas() {
        let sb = Sandbox()
        expectOK(sb.rtdb("increment", "/n", "41"), "{\"path\":\"/n\",\"value\":41}\n")
        expectOK(sb.rtdb("increment", "/n", "1"), "{\"path\":\"/n\",\"value\":42}\n")
        expectOK(sb.rtdb("increment", "/n", "-50"), "{\"path\":\"/n\",\"value\":-8}\n")
        expectOK(sb.rtdb("increment", "/n", "0.5"), "{\"path\":\"/n\",\"value\":-7.5}\n")
        expectOK(sb.rtdb("increment", "/n", "-0.25"), "{\"path\":\"/n\",\"value\":-7.75}\n")
        expectOK(sb.rtdb("increment", "/n", "7.75"), "{\"path\":\"/n\",\"value\":0}\n")
        expectOK(sb.rtdb("increment", "/n", "1e2"), "{\"path\":\"/n\",\"value\":100}\n")
        expectOK(sb.rtdb("get", "/n"), "100\n")
        // Doubles add as doubles, printed the JavaScript way.
        expectOK(sb.rtdb("set", "/f", "0.1", "-q"), "")
        expectOK(sb.rtdb("increment", "/f", "0.2"), "{\"path\":\"/f\",\"value\":0.30000000000000004}\n")
    }

    @Test func nonNumbersAreReplacedByTheDelta() {
        let sb = Sandbox()
        sb.seed("/", "{\"s\":\"abc\",\"b\":true,\"o\":{\"x\":1},\"keep\":1}")
        expectOK(sb.rtdb("increment", "/s", "2"), "{\"path\":\"/s\",\"value\":2}\n")
        expectOK(sb.rtdb("increment", "/b"), "{\"path\":\"/b\",\"value\":1}\n")
        expectOK(sb.rtdb("increment", "/o", "-3"), "{\"path\":\"/o\",\"value\":-3}\n")
        expectOK(sb.rtdb("get", "/"), "{\"b\":1,\"keep\":1,\"o\":-3,\"s\":2}\n")
    }

    @Test func int64ArithmeticIsExactUntilItOverflowsToDouble() {
        let sb = Sandbox()
        sb.seed("/big", "9223372036854775806")
        expectOK(sb.rtdb("increment", "/big"), "{\"path\":\"/big\",\"value\":9223372036854775807}\n")
        expectOK(sb.rtdb("get", "/big"), "9223372036854775807\n")
        // One more overflows: the sum becomes the double 9223372036854775808, printed as JS does.
        expectOK(sb.rtdb("increment", "/big"), "{\"path\":\"/big\",\"value\":9223372036854776000}\n")
        expectOK(sb.rtdb("get", "/big"), "9223372036854776000\n")
        sb.seed("/neg", "-9223372036854775808")
        expectOK(sb.rtdb("increment", "/neg", "-1"), "{\"path\":\"/neg\",\"value\":-9223372036854776000}\n")
        // Large exact integers keep every digit.
        sb.seed("/exact", "9007199254740993")
        expectOK(sb.rtdb("increment", "/exact", "2"), "{\"path\":\"/exact\",\"value\":9007199254740995}\n")
    }

    @Test func serverIncrementPlaceholderBehavesTheSame() {
        let sb = Sandbox()
        sb.seed("/n", "5")
        expectOK(sb.rtdb("set", "/n", "{\".sv\":{\"increment\":-2}}"), "{\"path\":\"/n\",\"value\":3}\n")
        expectOK(sb.rtdb("set", "/n", "{\".sv\":{\"increment\":0.5}}"), "{\"path\":\"/n\",\"value\":3.5}\n")
        expectOK(sb.rtdb("set", "/m", "{\".sv\":{\"increment\":1}}"), "{\"path\":\"/m\",\"value\":1}\n")
    }

    @Test func badDeltasAndPaths() {
        let sb = Sandbox()
        sb.seed("/n", "5")
        let before = sb.get("/")
        expectError(sb.rtdb("increment", "/n", "\"1\""), status: 3, code: "invalid_data")
        expectError(sb.rtdb("increment", "/n", "true"), status: 3, code: "invalid_data")
        expectError(sb.rtdb("increment", "/n", "{\"a\":1}"), status: 3, code: "invalid_data")
        expectError(sb.rtdb("increment", "/n", "abc"), status: 3, code: "invalid_json")
        expectError(sb.rtdb("increment", "/n", "1", "2"), status: 2, code: "usage")
        expectError(sb.rtdb("increment"), status: 2, code: "usage")
        expectError(sb.rtdb("increment", "/a.b"), status: 3, code: "invalid_path")
        expectError(sb.rtdb("increment", "/.info/n"), status: 3, code: "invalid_path")
        #expect(sb.get("/") == before)
    }
}
