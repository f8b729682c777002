import Testing
@testable import RTDBCLI

/// `Registry.command(named:)` builds one spec by name instead of the whole list; it must know
/// exactly the commands the registry lists.
@Suite struct RegistryLookupTests {
    @Test func everyListedCommandIsFoundByItsNameAndNothingElse() {
        for spec in Registry.commands {
            #expect(Registry.command(named: spec.name)?.name == spec.name, "\(spec.name)")
            #expect(Registry.command(named: spec.name)?.usage == spec.usage, "\(spec.name)")
        }
        for name in ["", "GET", "gets", "complete", "--help", "version"] {
            #expect(Registry.command(named: name) == nil, "\(name)")
        }
    }
}
