enum HelpCommand {
    static let spec = CommandSpec(
        name: "help", summary: "show help for rtdb or one command",
        usage: "rtdb help [COMMAND | options]",
        arguments: [("COMMAND", .command, "the command to explain, or options for the global options")],
        description: "Prints the usage, options and examples of COMMAND (the same text as 'rtdb COMMAND --help'); "
            + "'rtdb help options' explains the global options, which every command takes.",
        examples: ["rtdb help", "rtdb help query", "rtdb help options"],
        run: { _ in })
}
