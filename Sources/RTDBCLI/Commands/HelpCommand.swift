enum HelpCommand {
    static let spec = CommandSpec(
        name: "help", summary: "show help for rtdb or one command",
        usage: "rtdb help [COMMAND]",
        arguments: [("COMMAND", .command, "the command to explain")],
        description: "Prints the usage, options and examples of COMMAND (the same text as 'rtdb COMMAND --help').",
        examples: ["rtdb help", "rtdb help query"],
        run: { _ in })
}
