# fish completion for rtdb. Install as
# $PREFIX/share/fish/vendor_completions.d/rtdb.fish (`make install` does), or copy it to
# ~/.config/fish/completions/.
#
# Commands and options mirror the registry (Sources/RTDBCLI/Registry.swift); a test in
# Tests/CLITests fails when they drift apart. Database paths are completed live with
# `rtdb [--db FILE] __complete paths -- PREFIX`, from the database the command line names.

# Reads the command line before the cursor into __rtdb_cmd (the command), __rtdb_db (a --db
# given), __rtdb_expect (an option waiting for its value), __rtdb_npos (arguments before --),
# __rtdb_dashdash (1 after --) and __rtdb_ddn (words after --).
function __rtdb_scan
    set -g __rtdb_cmd ''
    set -g __rtdb_db ''
    set -g __rtdb_expect ''
    set -g __rtdb_npos 0
    set -g __rtdb_dashdash 0
    set -g __rtdb_ddn 0
    # Options that take a value (the next word, or after `=`).
    set -l value_options --db --url --auth --access-token --credentials --cacert --timeout --order-by-child \
        --cache --cache-size --connect-timeout --auth-command \
        --start-at --start-after --end-at --end-before --equal-to --start-key --end-key \
        --limit-to-first --limit-to-last --string -s --file --max-retries --command-timeout --wait --count --exec-fail \
        --host --port --data-dir --secret --secret-file --max-connections --loops --idle-timeout --max-response-bytes --max-write-bytes --write-size-limit --max-body-bytes-in-flight --max-listens --chunk-size --rules --claims --uid --coverage --project-id --jwks --tls-cert --tls-key \
        --on-disconnect-set --on-disconnect-update --on-disconnect-remove --on-connect-set --presence --last-online --events --transport \
        --session
    # Options that take two words: PATH VALUE.
    set -l pair_options --on-disconnect-set --on-disconnect-update --on-connect-set
    set -l tokens (commandline -opc)
    for w in $tokens[2..-1]
        if test -n "$__rtdb_expect"
            test "$__rtdb_expect" = --db; and set -g __rtdb_db $w
            # The PATH of a PATH VALUE option: the VALUE follows.
            if contains -- "$__rtdb_expect" $pair_options
                set -g __rtdb_expect VALUE
            else
                set -g __rtdb_expect ''
            end
        else if test $__rtdb_dashdash = 1
            set -g __rtdb_ddn (math $__rtdb_ddn + 1)
        else if test "$w" = --
            set -g __rtdb_dashdash 1
        else if string match -q -- '--db=*' $w
            set -g __rtdb_db (string replace -- --db= '' $w)
        else if string match -q -- '--*=*' $w
            continue
        else if string match -qr -- '^-[0-9.]' $w
            set -g __rtdb_npos (math $__rtdb_npos + 1)
        else if string match -q -- '-?*' $w
            contains -- $w $value_options; and set -g __rtdb_expect $w
        else if test -z "$__rtdb_cmd"
            set -g __rtdb_cmd $w
        else
            set -g __rtdb_npos (math $__rtdb_npos + 1)
        end
    end
    set -g __rtdb_db (string replace -r -- '^~/' "$HOME/" $__rtdb_db)
end

function __rtdb_needs_command
    __rtdb_scan
    test -z "$__rtdb_cmd" -a -z "$__rtdb_expect" -a $__rtdb_dashdash = 0
end

# True when the command is one of the arguments.
function __rtdb_using
    __rtdb_scan
    contains -- "$__rtdb_cmd" $argv
end

function __rtdb_wants_command_name
    __rtdb_scan
    test "$__rtdb_cmd" = help -a $__rtdb_npos = 0 -a -z "$__rtdb_expect"
end

function __rtdb_wants_path
    __rtdb_scan
    test -n "$__rtdb_expect"; and return 1
    # on-disconnect ACTION PATH
    if test "$__rtdb_cmd" = on-disconnect
        test $__rtdb_npos = 1 -a $__rtdb_dashdash = 0
        return
    end
    contains -- "$__rtdb_cmd" get set update push remove query increment tx watch; or return 1
    test $__rtdb_npos = 0 -a $__rtdb_dashdash = 0; and return 0
    # tx also takes `tx -- PATH CMD`.
    test "$__rtdb_cmd" = tx -a $__rtdb_npos = 0 -a $__rtdb_ddn = 0
end

# The CMD of `tx PATH -- CMD`, `watch PATH --exec -- CMD` and `session -- CMD`.
function __rtdb_wants_program
    __rtdb_scan
    test $__rtdb_dashdash = 1; or return 1
    set -l first 0
    test "$__rtdb_cmd" = tx -a $__rtdb_npos = 0; and set first 1
    contains -- "$__rtdb_cmd" tx watch session; and test $__rtdb_ddn = $first
end

function __rtdb_paths
    __rtdb_scan
    # The program as typed (./rtdb, ~/bin/rtdb), so paths come from the same build.
    set -l prog (commandline -opc)[1]
    set prog (string replace -r -- '^~/' "$HOME/" $prog)
    string match -q -- '*/*' $prog; and test -x $prog; or set prog rtdb
    command -q $prog; or return
    set -l args
    test -n "$__rtdb_db"; and set args --db $__rtdb_db
    # The word as the shell will pass it: escapes and an unfinished quote removed.
    set -l word (commandline -ct)
    set word (string unescape -- $word; or echo $word)
    set word (string replace -r -- '^[\'"]' '' $word)
    set -l paths (command $prog $args __complete paths -- "$word" 2>/dev/null)
    # fish has no "no space" flag: a second, longer candidate keeps the space off a single
    # path, so the user can go on with `/`.
    test (count $paths) -eq 1; and set paths $paths $paths[1]/
    printf '%s\n' $paths
end

complete -c rtdb -f

# Commands
complete -c rtdb -n __rtdb_needs_command -a get -d 'print the value at a path'
complete -c rtdb -n __rtdb_needs_command -a set -d 'replace the value at a path'
complete -c rtdb -n __rtdb_needs_command -a update -d 'replace several relative paths at once'
complete -c rtdb -n __rtdb_needs_command -a push -d 'add a value under a new push ID'
complete -c rtdb -n __rtdb_needs_command -a remove -d 'delete a path and everything below it'
complete -c rtdb -n __rtdb_needs_command -a query -d 'print the children of a path, filtered and ordered'
complete -c rtdb -n __rtdb_needs_command -a increment -d 'atomically add a number to the value at a path'
complete -c rtdb -n __rtdb_needs_command -a tx -d 'run a command as a compare-and-set transaction'
complete -c rtdb -n __rtdb_needs_command -a watch -d 'stream value or child events as JSON lines'
complete -c rtdb -n __rtdb_needs_command -a session -d 'hold a session whose writes run when it ends (presence)'
complete -c rtdb -n __rtdb_needs_command -a on-disconnect -d 'change the on-disconnect operations of a live session'
complete -c rtdb -n __rtdb_needs_command -a queue -d 'list, drop or clear the writes an offline cache has not sent'
complete -c rtdb -n __rtdb_needs_command -a sync -d 'send the queued writes of an offline cache, refresh kept locations'
complete -c rtdb -n __rtdb_needs_command -a keep -d 'keep a location or query of an offline cache synced'
complete -c rtdb -n __rtdb_needs_command -a cache -d 'show, list, purge or clear an offline cache'
complete -c rtdb -n __rtdb_needs_command -a index -d 'add, remove or list the indexes queries use'
complete -c rtdb -n __rtdb_needs_command -a serve -d 'serve the database over Firebase REST and streaming'
complete -c rtdb -n __rtdb_needs_command -a rules -d 'check, simulate or test security rules'
complete -c rtdb -n __rtdb_needs_command -a help -d 'show help for rtdb or one command'
complete -c rtdb -n __rtdb_wants_command_name -a 'get set update push remove query increment tx watch session on-disconnect queue sync keep cache index serve rules help options guide'

# Arguments
complete -c rtdb -n __rtdb_wants_path -a '(__rtdb_paths)'
complete -c rtdb -n __rtdb_wants_program -a '(__fish_complete_command)'

# Global options
complete -c rtdb -l db -r -F -d 'embedded database file (env RTDB_DB)'
complete -c rtdb -l url -x -d 'remote database URL (env RTDB_URL)'
complete -c rtdb -l auth -x -d 'credential for a remote database (env RTDB_AUTH)'
complete -c rtdb -l access-token -x -d 'OAuth2 access token (env RTDB_ACCESS_TOKEN)'
complete -c rtdb -l credentials -r -F -d 'service-account key file (env GOOGLE_APPLICATION_CREDENTIALS)'
complete -c rtdb -l cacert -r -F -d 'extra CA certificates for https (env RTDB_CACERT)'
complete -c rtdb -l timeout -x -d 'give up after this many seconds (env RTDB_TIMEOUT)'
complete -c rtdb -l persist -d 'keep an offline cache of the remote database (env RTDB_PERSIST=1)'
complete -c rtdb -l cache -r -F -d 'the offline cache file (env RTDB_CACHE)'
complete -c rtdb -l offline -d 'never contact the server, use the cache (env RTDB_OFFLINE=1)'
complete -c rtdb -l online -d 'the server is required, nothing stays queued'
complete -c rtdb -l cache-size -x -d 'size limit of the cache in bytes (env RTDB_CACHE_SIZE)'
complete -c rtdb -l connect-timeout -x -d 'use the cache after this many seconds (env RTDB_CONNECT_TIMEOUT)'
complete -c rtdb -l auth-command -x -a '(__fish_complete_command)' -d 'shell command printing a credential (env RTDB_AUTH_COMMAND)'
complete -c rtdb -l pretty -d 'indent JSON output for humans'
complete -c rtdb -s q -l quiet -d 'print nothing on success'
complete -c rtdb -s v -l verbose -d 'say on stderr which database rtdb works on'
complete -c rtdb -s h -l help -d 'show help for the command'
complete -c rtdb -l version -d 'print the version'

# get
complete -c rtdb -n '__rtdb_using get' -l shallow -d 'print an object as {"child":true,...}'
complete -c rtdb -n '__rtdb_using get' -l export -d 'include priorities, as format=export'
complete -c rtdb -n '__rtdb_using get' -l exists -d 'print true or false: whether anything is at PATH (exit 0 or 11)'
# get, query, watch, push
complete -c rtdb -n '__rtdb_using get query watch push' -s r -l raw -d 'print a string value as its text, without quotes'
# set, push, update, on-disconnect
complete -c rtdb -n '__rtdb_using set push on-disconnect' -s s -l string -x -d 'write TEXT as a JSON string'
complete -c rtdb -n '__rtdb_using set push update on-disconnect' -l file -r -F -d 'read the JSON value from FILE'
complete -c rtdb -n '__rtdb_using set on-disconnect' -l server-timestamp -d 'write the server time'
complete -c rtdb -n '__rtdb_using set' -l chunked -d 'through --url, write in several requests (not atomic)'
complete -c rtdb -n '__rtdb_using set' -l chunk-size -x -d 'with --chunked, the most JSON one request carries'
complete -c rtdb -n '__rtdb_using set' -l force -d 'replace the root of a database that holds data; with --chunked, remove what the location holds first'
complete -c rtdb -n '__rtdb_using remove' -l force -d 'delete the root of a database that holds data'
complete -c rtdb -n '__rtdb_using push' -l lines -d 'push each JSON line of stdin, in bounded memory'
complete -c rtdb -n '__rtdb_using push' -l key-only -d 'print a new push ID without writing anything'
# tx
complete -c rtdb -n '__rtdb_using tx' -l max-retries -x -d 'attempts in all before giving up (default 25 on a remote database, no limit on the embedded one)'
complete -c rtdb -n '__rtdb_using tx' -l command-timeout -x -d 'stop CMD when one run takes longer, and commit nothing'
complete -c rtdb -n '__rtdb_using tx' -l wait -x -d 'with an offline cache, wait this long for the server'
complete -c rtdb -n '__rtdb_using get query' -l partial -d 'with an offline cache, print the part it holds (exit 10)'
# queue, sync
complete -c rtdb -n '__rtdb_using queue; and not __fish_seen_subcommand_from drop clear' -a 'drop clear' -d 'queue action'
complete -c rtdb -n '__rtdb_using queue' -l rejected -d 'list the rejected writes instead'
complete -c rtdb -n '__rtdb_using sync' -l writes-only -d 'send the queued writes only'
complete -c rtdb -n '__rtdb_using sync' -l follow -d 'keep sending new writes until SIGINT or SIGTERM'
# watch
complete -c rtdb -n '__rtdb_using watch' -l child-events -d 'print child events instead of value events'
complete -c rtdb -n '__rtdb_using watch' -l count -x -d 'exit after N event lines'
complete -c rtdb -n '__rtdb_using watch' -l exec -d 'run CMD (after --) once per event'
complete -c rtdb -n '__rtdb_using watch' -s n -l changes-only -d 'print only changes, not the current value'
complete -c rtdb -n '__rtdb_using watch' -l exec-fail -x -a 'continue stop' -d 'when CMD exits non-zero'
# session
complete -c rtdb -n '__rtdb_using session' -l on-disconnect-set -x -a '(__rtdb_paths)' -d 'when the session ends, set PATH to VALUE'
complete -c rtdb -n '__rtdb_using session' -l on-disconnect-update -x -a '(__rtdb_paths)' -d 'when the session ends, update PATH with VALUE'
complete -c rtdb -n '__rtdb_using session' -l on-disconnect-remove -x -a '(__rtdb_paths)' -d 'when the session ends, remove PATH'
complete -c rtdb -n '__rtdb_using session' -l on-connect-set -x -a '(__rtdb_paths)' -d 'once registered, set PATH to VALUE'
complete -c rtdb -n '__rtdb_using session' -l presence -x -a '(__rtdb_paths)' -d 'push a child of P, register its removal, set it to VALUE (default true)'
complete -c rtdb -n '__rtdb_using session' -l last-online -x -a '(__rtdb_paths)' -d 'register a set of P to the server time'
complete -c rtdb -n '__rtdb_using session' -l events -r -F -d 'write the event lines to FILE'
complete -c rtdb -n '__rtdb_using session' -l client-side -d 'with --url: make the writes from this session over REST'
complete -c rtdb -n '__rtdb_using session' -l transport -x -a 'realtime rest' -d 'with --url: realtime (default) or rest'
# on-disconnect
complete -c rtdb -n '__rtdb_using on-disconnect; and not __fish_seen_subcommand_from set update remove cancel' -a 'set update remove cancel' -d 'on-disconnect action'
complete -c rtdb -n '__rtdb_using on-disconnect' -l session -x -d 'the session to change (env RTDB_SESSION)'
# serve
complete -c rtdb -n '__rtdb_using serve' -l host -x -d 'address to listen on (default 127.0.0.1)'
complete -c rtdb -n '__rtdb_using serve' -l port -x -d 'port to listen on (default 9000; 0 picks one)'
complete -c rtdb -n '__rtdb_using serve' -l data-dir -x -a '(__fish_complete_directories)' -d 'one database file per namespace'
complete -c rtdb -n '__rtdb_using serve' -l secret -x -d 'require this credential (env RTDB_SERVE_SECRET or RTDB_SECRET)'
complete -c rtdb -n '__rtdb_using serve' -l secret-file -r -F -d 'read the credential of --secret from FILE'
complete -c rtdb -n '__rtdb_using serve' -l insecure -d 'allow a non-loopback address without --secret'
complete -c rtdb -n '__rtdb_using serve' -l rules -r -F -d 'enforce the security rules in FILE'
complete -c rtdb -n '__rtdb_using serve' -l project-id -x -d 'verify ID tokens for this project (needs --jwks)'
complete -c rtdb -n '__rtdb_using serve' -l jwks -r -F -d 'Google token-signing keys for --project-id'
complete -c rtdb -n '__rtdb_using serve' -l strict-indexes -d '400 for an orderBy without .indexOn'
# keep, cache
complete -c rtdb -n '__rtdb_using keep; and not __fish_seen_subcommand_from add rm ls' -a 'add rm ls' -d 'keep action'
complete -c rtdb -n '__rtdb_using keep; and __fish_seen_subcommand_from add rm; and test $__rtdb_npos = 1' -a '(__rtdb_paths)'
complete -c rtdb -n '__rtdb_using cache; and not __fish_seen_subcommand_from info ls prune clear' -a 'info ls prune clear' -d 'cache action'
complete -c rtdb -n '__rtdb_using cache' -l vacuum -d 'prune: give the freed space back'
complete -c rtdb -n '__rtdb_using cache' -l all -d 'clear: also drop the queued writes'
# index
complete -c rtdb -n '__rtdb_using index; and not __fish_seen_subcommand_from add remove list' -a 'add remove list' -d 'index action'

# rules
complete -c rtdb -n '__rtdb_using rules; and not __fish_seen_subcommand_from check simulate test' -a check -d 'check a rules file'
complete -c rtdb -n '__rtdb_using rules; and not __fish_seen_subcommand_from check simulate test' -a simulate -d 'decide one request against rules'
complete -c rtdb -n '__rtdb_using rules; and not __fish_seen_subcommand_from check simulate test' -a test -d 'run a file of rules test cases'
complete -c rtdb -n '__rtdb_using rules; and __fish_seen_subcommand_from check test' -F
complete -c rtdb -n '__rtdb_using rules; and __fish_seen_subcommand_from simulate; and test $__rtdb_npos = 1' -a 'read set update remove'
complete -c rtdb -n '__rtdb_using rules; and __fish_seen_subcommand_from simulate; and test $__rtdb_npos = 2' -a '(__rtdb_paths)'
complete -c rtdb -n '__rtdb_using rules' -l rules -r -F -d 'simulate and test: the rules file'
complete -c rtdb -n '__rtdb_using rules' -l claims -x -d 'simulate: the token claims of the request (JSON)'
complete -c rtdb -n '__rtdb_using rules' -l uid -x -d 'simulate: signed in as this user'
complete -c rtdb -n '__rtdb_using rules' -l coverage -r -F -d 'test: write the coverage report to FILE'
complete -c rtdb -n '__rtdb_using serve' -l tls-cert -r -F -d 'serve https with this PEM certificate'
complete -c rtdb -n '__rtdb_using serve' -l tls-key -r -F -d 'the PEM private key of --tls-cert'
complete -c rtdb -n '__rtdb_using serve' -l log -d 'one JSON line per request on stderr'
complete -c rtdb -n '__rtdb_using serve' -l no-ui -d 'do not serve the data viewer at /.ui/'
complete -c rtdb -n '__rtdb_using serve' -l max-connections -x -d 'refuse connections beyond N open ones'
complete -c rtdb -n '__rtdb_using serve' -l loops -x -d 'serve requests on N event loops, one thread each'
complete -c rtdb -n '__rtdb_using serve' -l idle-timeout -x -d 'drop a client silent for this many seconds'
complete -c rtdb -n '__rtdb_using serve' -l max-response-bytes -x -d 'answer a larger read as Firebase does past its limit'
complete -c rtdb -n '__rtdb_using serve' -l max-write-bytes -x -d 'refuse a larger write body'
complete -c rtdb -n '__rtdb_using serve' -l write-size-limit -x -a 'tiny small medium large unlimited' -d 'the writeSizeLimit of writes that name none'
complete -c rtdb -n '__rtdb_using serve' -l max-body-bytes-in-flight -x -d 'answer 503 past this many body bytes being received'
complete -c rtdb -n '__rtdb_using serve' -l max-listens -x -d 'refuse listens and streams beyond N on the server'
# query and watch
complete -c rtdb -n '__rtdb_using query watch keep' -l order-by-key -d 'order children by key (the default)'
complete -c rtdb -n '__rtdb_using query watch keep' -l order-by-value -d 'order children by their own value'
complete -c rtdb -n '__rtdb_using query watch keep' -l order-by-priority -d 'order children by priority'
complete -c rtdb -n '__rtdb_using query watch keep' -l order-by-child -x -d 'order children by the value at CHILD'
complete -c rtdb -n '__rtdb_using query watch keep' -l start-at -x -d 'lower bound, inclusive'
complete -c rtdb -n '__rtdb_using query watch keep' -l start-after -x -d 'lower bound, exclusive'
complete -c rtdb -n '__rtdb_using query watch keep' -l end-at -x -d 'upper bound, inclusive'
complete -c rtdb -n '__rtdb_using query watch keep' -l end-before -x -d 'upper bound, exclusive'
complete -c rtdb -n '__rtdb_using query watch keep' -l equal-to -x -d 'only children whose sort value is V'
complete -c rtdb -n '__rtdb_using query watch keep' -l start-key -x -d 'key argument of the lower bound'
complete -c rtdb -n '__rtdb_using query watch keep' -l end-key -x -d 'key argument of the upper bound'
complete -c rtdb -n '__rtdb_using query watch keep' -l limit-to-first -x -d 'keep the first N children'
complete -c rtdb -n '__rtdb_using query watch keep' -l limit-to-last -x -d 'keep the last N children'
