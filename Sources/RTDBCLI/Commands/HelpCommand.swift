enum HelpCommand {
    static let spec = CommandSpec(
        name: "help", summary: "show help for rtdb or one command",
        usage: "rtdb help [COMMAND | options | guide]",
        arguments: [("COMMAND", .command, "the command to explain, options for the global options, or guide")],
        description: "Prints the usage, options and examples of COMMAND (the same text as 'rtdb COMMAND --help'); "
            + "'rtdb help options' explains the global options, which every command takes; 'rtdb help guide' "
            + "gives each call of Firebase's guides (setValue, observe, runTransactionBlock, keepSynced, ...) "
            + "as the command that does the same, and the guides' idioms as shell lines.",
        examples: ["rtdb help", "rtdb help query", "rtdb help options", "rtdb help guide"],
        run: { _ in })
}
