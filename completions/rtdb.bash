# bash completion for rtdb                                   -*- shell-script -*-
#
# Install as $PREFIX/share/bash-completion/completions/rtdb (`make install` does), or
# `source` this file from ~/.bashrc. Needs bash 4 or later.
#
# Commands and options mirror the registry (Sources/RTDBCLI/Registry.swift); a test in
# Tests/CLITests fails when they drift apart. Database paths are completed live with
# `rtdb [--db FILE] __complete paths -- PREFIX`, from the database the command line names.

_rtdb_commands="get set update push remove query increment tx watch session on-disconnect queue sync keep cache index serve rules help"
_rtdb_global_options="--db --url --auth --access-token --credentials --cacert --timeout --persist --cache --offline --online --cache-size --connect-timeout --auth-command --pretty --quiet -q --verbose -v --help -h --version"
_rtdb_query_options="--order-by-key --order-by-value --order-by-child --order-by-priority --start-at --start-after --end-at --end-before --equal-to --start-key --end-key --limit-to-first --limit-to-last"
# Options that take a value (the next word, or after `=`).
_rtdb_value_options="--db --url --auth --access-token --credentials --cacert --timeout --cache --cache-size --connect-timeout --auth-command --order-by-child --start-at --start-after --end-at --end-before --equal-to --start-key --end-key --limit-to-first --limit-to-last --string -s --file --max-retries --command-timeout --wait --count --exec-fail --host --port --data-dir --secret --secret-file --max-connections --loops --idle-timeout --max-response-bytes --max-write-bytes --write-size-limit --max-body-bytes-in-flight --max-listens --chunk-size --rules --claims --uid --coverage --project-id --jwks --tls-cert --tls-key --on-disconnect-set --on-disconnect-update --on-disconnect-remove --on-connect-set --presence --last-online --events --transport --session"
# Options that take two words: PATH VALUE.
_rtdb_pair_options="--on-disconnect-set --on-disconnect-update --on-connect-set"

# The options of command $1.
_rtdb_command_options() {
    case $1 in
        get) echo "--shallow --export --exists --raw -r --partial" ;;
        set) echo "--string -s --file --server-timestamp --chunked --chunk-size --force" ;;
        update) echo "--file" ;;
        remove) echo "--force" ;;
        push) echo "--string -s --file --lines --key-only --raw -r" ;;
        query) echo "--raw -r --partial $_rtdb_query_options" ;;
        tx) echo "--max-retries --command-timeout --wait" ;;
        queue) echo "--rejected" ;;
        sync) echo "--writes-only --follow" ;;
        watch) echo "--child-events --changes-only -n --count --exec --exec-fail --raw -r $_rtdb_query_options" ;;
        keep) echo "$_rtdb_query_options" ;;
        cache) echo "--vacuum --all" ;;
        session) echo "--on-disconnect-set --on-disconnect-update --on-disconnect-remove --on-connect-set --presence --last-online --events --client-side --transport" ;;
        on-disconnect) echo "--session --string -s --file --server-timestamp" ;;
        rules) echo "--rules --claims --uid --coverage" ;;
        serve) echo "--host --port --data-dir --secret --secret-file --insecure --rules --project-id --jwks --strict-indexes --tls-cert --tls-key --log --no-ui --max-connections --loops --idle-timeout --max-response-bytes --max-write-bytes --write-size-limit --max-body-bytes-in-flight --max-listens" ;;
    esac
}

# Sets `words` and `cword` from COMP_WORDS, joined back where COMP_WORDBREAKS split a word
# (`--db=x`, `/a:b`) and cut at the cursor.
_rtdb_words() {
    words=() cword=0
    if [[ -z ${COMP_LINE-} ]]; then
        words=("${COMP_WORDS[@]}") cword=$COMP_CWORD
        return
    fi
    local line=${COMP_LINE:0:COMP_POINT} rest w i j=-1
    for ((i = 0; i <= COMP_CWORD && i < ${#COMP_WORDS[@]}; i++)); do
        w=${COMP_WORDS[i]}
        rest=${line#"${line%%[![:space:]]*}"}
        ((i == COMP_CWORD)) && w=${rest:0:${#w}}
        if ((j < 0)) || [[ ${#rest} != "${#line}" ]]; then
            words[++j]=$w
        else
            words[j]+=$w
        fi
        line=${rest:${#w}}
    done
    ((j < 0)) && words=("") j=0
    cword=$j
}

# Database paths extending $2, read from database file $1 (empty: the one rtdb picks itself).
_rtdb_paths() {
    local prog=$3 word=$2 quoted=0 line
    local -a args=()
    [[ -n $1 ]] && args=(--db "$1")
    case $word in
        \'* | \"*) word=${word:1} quoted=1 ;;
        *) word=${word//\\/} ;;
    esac
    while IFS= read -r line; do
        [[ -z $line ]] && continue
        # Inside quotes the word is kept as it is; outside, special characters are escaped.
        if ((quoted)); then COMPREPLY+=("${2:0:1}$line"); else COMPREPLY+=("$(printf '%q' "$line")"); fi
    done < <("$prog" "${args[@]}" __complete paths -- "$word" 2>/dev/null)
    # Paths end without a space, so the user can go on with `/`.
    compopt -o nospace 2>/dev/null
}

_rtdb_files() {
    local IFS=$'\n'
    COMPREPLY+=($(compgen -f -- "$1"))
    compopt -o filenames 2>/dev/null
}

_rtdb() {
    local -a words
    local cword
    _rtdb_words
    local cur=${words[cword]}
    COMPREPLY=()

    # The program as typed (./rtdb, ~/bin/rtdb), so paths come from the same build.
    local prog=${words[0]}
    [[ $prog == "~/"* ]] && prog=$HOME/${prog:2}
    [[ $prog == */* && -x $prog ]] || prog=rtdb

    local cmd="" db="" expect="" first="" w i npos=0 dashdash=0 ddn=0
    for ((i = 1; i < cword; i++)); do
        w=${words[i]}
        if [[ -n $expect ]]; then
            [[ $expect == --db ]] && db=$w
            # The PATH of a PATH VALUE option: the VALUE follows.
            if [[ " $_rtdb_pair_options " == *" $expect "* ]]; then expect=VALUE; else expect=""; fi
        elif ((dashdash)); then
            ((++ddn))
        elif [[ $w == -- ]]; then
            dashdash=1
        elif [[ $w == --db=* ]]; then
            db=${w#--db=}
        elif [[ $w == --*=* ]]; then
            :
        elif [[ $w == -[0-9.]* ]]; then
            ((++npos))
        elif [[ $w == -?* ]]; then
            [[ " $_rtdb_value_options " == *" $w "* ]] && expect=$w
        elif [[ -z $cmd ]]; then
            cmd=$w
        else
            # The first argument: a command's ACTION, which decides what the others are.
            ((npos == 0)) && first=$w
            ((++npos))
        fi
    done
    [[ $db == "~/"* ]] && db=$HOME/${db:2}

    if [[ -n $expect ]]; then
        case $expect in
            --db | --file | --rules | --coverage | --jwks | --credentials | --cacert | --cache | --tls-cert | --tls-key | --secret-file) _rtdb_files "$cur" ;;
            --data-dir) COMPREPLY=($(compgen -d -- "$cur")) ;;
            --exec-fail) COMPREPLY=($(compgen -W "continue stop" -- "$cur")) ;;
            --transport) COMPREPLY=($(compgen -W "realtime rest" -- "$cur")) ;;
            --write-size-limit) COMPREPLY=($(compgen -W "tiny small medium large unlimited" -- "$cur")) ;;
            --events) _rtdb_files "$cur" ;;
            --on-disconnect-set | --on-disconnect-update | --on-disconnect-remove | --on-connect-set | --presence | --last-online)
                _rtdb_paths "$db" "$cur" "$prog" ;;
        esac
    elif ((dashdash)); then
        # tx PATH -- CMD, watch PATH --exec -- CMD, session -- CMD; tx also takes `tx -- PATH CMD`.
        local first=0
        [[ $cmd == tx ]] && ((npos == 0)) && first=1
        if ((first && ddn == 0)); then
            _rtdb_paths "$db" "$cur" "$prog"
        elif [[ $cmd == tx || $cmd == watch || $cmd == session ]] && ((ddn == first)); then
            COMPREPLY=($(compgen -c -- "$cur"))
        else
            _rtdb_files "$cur"
        fi
    elif [[ $cur == --db=* || $cur == --file=* || $cur == --tls-cert=* || $cur == --tls-key=* ]]; then
        _rtdb_files "${cur#*=}"
        COMPREPLY=("${COMPREPLY[@]/#/${cur%%=*}=}")
    elif [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$(_rtdb_command_options "$cmd") $_rtdb_global_options" -- "$cur"))
    elif [[ -z $cmd ]]; then
        COMPREPLY=($(compgen -W "$_rtdb_commands" -- "$cur"))
    elif [[ $cmd == help ]]; then
        ((npos == 0)) && COMPREPLY=($(compgen -W "$_rtdb_commands options guide" -- "$cur"))
    elif [[ $cmd == on-disconnect ]]; then
        if ((npos == 0)); then COMPREPLY=($(compgen -W "set update remove cancel" -- "$cur"))
        elif ((npos == 1)); then _rtdb_paths "$db" "$cur" "$prog"; fi
    elif [[ $cmd == rules ]]; then
        if ((npos == 0)); then COMPREPLY=($(compgen -W "check simulate test" -- "$cur"))
        elif [[ $first == simulate ]]; then
            if ((npos == 1)); then COMPREPLY=($(compgen -W "read set update remove" -- "$cur"))
            elif ((npos == 2)); then _rtdb_paths "$db" "$cur" "$prog"; fi
        else _rtdb_files "$cur"; fi
    elif [[ $cmd == queue ]]; then
        ((npos == 0)) && COMPREPLY=($(compgen -W "drop clear" -- "$cur"))
    elif [[ $cmd == sync ]]; then
        :
    elif [[ $cmd == keep ]]; then
        if ((npos == 0)); then COMPREPLY=($(compgen -W "add rm ls" -- "$cur"))
        elif ((npos == 1)); then _rtdb_paths "$db" "$cur" "$prog"; fi
    elif [[ $cmd == cache ]]; then
        ((npos == 0)) && COMPREPLY=($(compgen -W "info ls prune clear" -- "$cur"))
    elif [[ $cmd == index ]]; then
        if ((npos == 0)); then COMPREPLY=($(compgen -W "add remove list" -- "$cur"))
        elif ((npos == 1)); then _rtdb_paths "$db" "$cur" "$prog"
        elif ((npos == 2)); then COMPREPLY=($(compgen -W ".value" -- "$cur")); fi
    elif [[ $cmd != serve && $cmd != session && $cmd != on-disconnect && " $_rtdb_commands " == *" $cmd "* ]] && ((npos == 0)); then
        _rtdb_paths "$db" "$cur" "$prog"
    fi

    # Readline replaces only the text after the last COMP_WORDBREAKS character of the word.
    local breaks=${COMP_WORDBREAKS//[[:space:]]/}
    if [[ -n $breaks && $cur == *["$breaks"]* ]]; then
        local keep=${cur%"${cur##*["$breaks"]}"} c
        local -a cut=()
        for c in "${COMPREPLY[@]}"; do
            [[ $c == "$keep"* ]] && cut+=("${c:${#keep}}")
        done
        COMPREPLY=("${cut[@]}")
    fi
    return 0
}

complete -F _rtdb rtdb
