/// How deeply a rules document and its expressions may nest. Loading, checking and evaluating a
/// rule recurse once (or a few times) per level of nesting, so these limits are what keep their
/// stack bounded: the deepest rules allowed fit in a 512 KB thread stack in a debug build, where
/// frames are largest (NestingLimitTests measures it). What is long but flat (a chain of 100,000
/// `||` terms, an object of many rules) does not nest and is not limited here.
enum Nesting {
    /// Levels of an expression's tree: brackets, arguments, branches of `?:`, prefix and postfix
    /// operators each add one.
    static let expressionLimit = 48
    /// Levels of JSON containers in a rules file. Data is at most 32 levels deep, so rules
    /// deeper than that never apply.
    static let documentLimit = 64

    /// The error for an expression past the limit, at the token where it goes past.
    static let expressionTooDeep = "Expression nested more than \(expressionLimit) levels."
    /// The error for a rules file whose JSON nests past the limit, at the value that goes past.
    static let documentTooDeep = "JSON nested more than \(documentLimit) levels."
}
