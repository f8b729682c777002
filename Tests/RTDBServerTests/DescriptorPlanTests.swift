import Testing
@testable import RTDBServer

/// The descriptor plan never asks for more than the limit once the limit is low, keeps
/// everything asked for when it is high, and always leaves each part at least one.
@Suite struct DescriptorPlanTests {
    @Test func aHighLimitKeepsEverythingAskedFor() {
        let plan = DescriptorPlan.plan(limit: 1 << 20, connections: 10_000, openFiles: 64, followedFiles: 256)
        #expect(plan == DescriptorPlan(connections: 10_000, openFiles: 64, followedFiles: 256))
        #expect(plan.descriptors == 10_000 + 32 + 3 * 320)
    }

    @Test func ulimit256SharesTheRestBetweenCachedAndFollowedFiles() {
        let plan = DescriptorPlan.plan(limit: 256, connections: 10_000, openFiles: 64, followedFiles: 256)
        #expect(plan == DescriptorPlan(connections: 128, openFiles: 16, followedFiles: 16))
        #expect(plan.descriptors <= 256)
    }

    @Test func everyLimitFromSixtyFourUpFitsItsPlan() {
        for limit in stride(from: 64, through: 20_000, by: 37) {
            let plan = DescriptorPlan.plan(limit: limit, connections: 10_000, openFiles: 64, followedFiles: 256)
            #expect(plan.descriptors <= limit, "limit \(limit): \(plan)")
            // Half the limit, unless that leaves no room for one file of each kind.
            #expect(plan.connections >= min(limit / 2, limit - 38) || plan.connections == 10_000, "limit \(limit): \(plan)")
            #expect(plan.openFiles >= 1 && plan.followedFiles >= 1)
        }
    }

    @Test func aTinyLimitStillServesSomeone() {
        let plan = DescriptorPlan.plan(limit: 8, connections: 10_000, openFiles: 64, followedFiles: 256)
        #expect(plan.connections >= 1 && plan.openFiles == 1 && plan.followedFiles == 1)
    }
}
