# fish completion for rlock(1)
# SPDX-License-Identifier: MIT

# Where the cursor is: prints "sub WORD" after a subcommand word, "cmd"
# on COMMAND's first word, "args N" on its arguments (N: the index of
# COMMAND in `commandline -opc`), "opts" otherwise ("opts key" once -k
# was given).
function __rlock_state
    set -l tokens (commandline -opc)
    set -l n (count $tokens)
    set -l key 0
    set -l i 1
    while test $i -lt $n
        set i (math $i + 1)
        set -l t $tokens[$i]
        switch $t
            case --
                if test $i -eq $n
                    echo cmd
                else
                    echo args (math $i + 1)
                end
                return
            case -k --key
                set key 1
                set i (math $i + 1)
            case -w --timeout -l --lease -E --conflict-exit-code -N --limit -c --command --on-lost --kill-after -u --url --password-file --config --connect-timeout --prefix --tls-cacert --tls-cacertdir --tls-cert --tls-key --tls-sni --min-hold --max-hold --pid
                set i (math $i + 1)
            case '--key=*' '-k?*'
                set key 1
            case '--*'
            case '-*'
                # A bundle such as -nk KEY: the first letter that takes a
                # value takes the rest of the word, or the next word.
                set -l m (string match -r -- '^-[^kwlENcu]*([kwlENcu])(.*)$' $t)
                if set -q m[2]
                    test "$m[2]" = k; and set key 1
                    test -z "$m[3]"; and set i (math $i + 1)
                end
            case '*'
                if test $key -eq 1
                    echo args $i
                else
                    echo sub $t
                end
                return
        end
    end
    if test $key -eq 1
        echo opts key
    else
        echo opts
    end
end

function __rlock_in_opts
    string match -q 'opts*' -- (__rlock_state)
end

function __rlock_no_key
    test (__rlock_state) = opts
end

function __rlock_in_sub
    set -l s (string split ' ' -- (__rlock_state))
    test "$s[1]" = sub; and contains -- "$s[2]" $argv
end

function __rlock_in_cmd
    set -l s (__rlock_state)
    test "$s" = cmd; or test "$s" = "opts key"
end

function __rlock_in_args
    string match -q 'args *' -- (__rlock_state)
end

# COMMAND's own completion, for the words after its name.
function __rlock_complete_args
    set -l s (string split ' ' -- (__rlock_state))
    set -l from $s[2]
    set -l tokens (commandline -opc)
    set -l cmd $tokens[$from..-1] (commandline -ct)
    complete -C (string join -- ' ' (string escape -- $cmd))
end

# Lock names held now: the first column of `rlock list`, quietly and
# quickly, with the connection options already on the line. With
# --redlock, list prints each master's locks under a header line without
# a tab: only the lines with one are locks, once each.
function __rlock_keys
    set -l tokens (commandline -opc)
    set -l conn
    set -l i 2
    while test $i -le (count $tokens)
        switch $tokens[$i]
            case -u --url --prefix --password-file --config --tls-cacert --tls-cacertdir --tls-cert --tls-key --tls-sni
                set -a conn $tokens[$i] $tokens[(math $i + 1)]
                set i (math $i + 1)
            case '--url=*' '--prefix=*' '--password-file=*' '--config=*' '-u?*' --redlock --tls --tls-insecure '--tls-cacert=*' '--tls-cacertdir=*' '--tls-cert=*' '--tls-key=*' '--tls-sni=*'
                set -a conn $tokens[$i]
            case --
                break
        end
        set i (math $i + 1)
    end
    command timeout 2 $tokens[1] list --connect-timeout 0.5 $conn 2>/dev/null |
        command awk -F '\t' 'NF > 1 && !seen[$1]++ { print $1 }'
end

complete -c rlock -f

# Subcommands, only before -k.
complete -c rlock -n __rlock_no_key -a status -d 'Who holds KEY, since when, lease left, waiters, last run'
complete -c rlock -n __rlock_no_key -a list -d 'Every lock currently held'
complete -c rlock -n __rlock_no_key -a release -d 'Break a lock held by someone else'
complete -c rlock -n __rlock_no_key -a lock -d 'Take KEY for this shell (a section of a script)'
complete -c rlock -n __rlock_no_key -a unlock -d 'Give back what this shell took with lock'

# Run-mode options, also after lock.
set -l __rlock_run '__rlock_in_opts; or __rlock_in_sub lock'
complete -c rlock -n $__rlock_run -s k -l key -x -a '(__rlock_keys)' -d 'Lock name'
complete -c rlock -n $__rlock_run -s c -l command -x -a '(__fish_complete_command)' -d 'Run CMD through /bin/sh -c'
complete -c rlock -n $__rlock_run -s n -l nonblock -d 'Fail at once if the lock is held'
complete -c rlock -n $__rlock_run -s w -l timeout -x -a '0 30s 5m 1h' -d 'Wait at most DUR for the lock'
complete -c rlock -n $__rlock_run -s l -l lease -x -a '10s 30s 2m 5m' -d 'Lease of the lock, renewed every DUR/3'
complete -c rlock -n $__rlock_run -s E -l conflict-exit-code -x -d 'Exit status when not obtained'
complete -c rlock -n $__rlock_run -s N -l limit -x -d 'Semaphore: at most N holders'
complete -c rlock -n $__rlock_run -s s -l shared -d 'Shared (read) lock: with other shared holders only'
complete -c rlock -n $__rlock_run -s x -l exclusive -d 'Exclusive lock (the default)'
complete -c rlock -n $__rlock_run -l fair -d 'First come, first served among waiters'
complete -c rlock -n $__rlock_run -l on-lost -x -a 'term\t"SIGTERM, then SIGKILL" kill\tSIGKILL ignore\t"Warn only"' -d 'Action when the lease is lost'
complete -c rlock -n $__rlock_run -l kill-after -x -a '5s 10s 30s' -d 'SIGTERM to SIGKILL grace (lost lease, --max-hold)'
complete -c rlock -n $__rlock_run -l min-hold -x -a '30s 1m 5m' -d 'Keep the lock until DUR after it was acquired'
complete -c rlock -n $__rlock_run -l max-hold -x -a '10m 1h 2h' -d 'Stop COMMAND once it held the lock for DUR'
complete -c rlock -n $__rlock_run -l syslog -d 'Also log skips, runs and errors to syslog'
complete -c rlock -n $__rlock_run -l redisson -d 'KEY is a lock of Redisson (Java): getLock(KEY)'
complete -c rlock -n '__rlock_in_sub lock' -l pid -x -a '(__fish_complete_pids)' -d 'The owner of the lock (default: this shell)'
complete -c rlock -n '__rlock_in_sub lock' -l export -d 'Print export RLOCK_KEY=... for eval'
complete -c rlock -n '__rlock_in_sub unlock' -s k -l key -x -a '(__rlock_keys)' -d 'Lock name'
complete -c rlock -n $__rlock_run -s V -l version -d 'Show the version'

# Connection options: before -k, or after a subcommand word.
set -l __rlock_conn '__rlock_in_opts; or __rlock_in_sub status list release lock'
complete -c rlock -n $__rlock_conn -s u -l url -x -a 'redis:// rediss:// unix:// redis+sentinel:// rediss+sentinel:// redis+cluster:// rediss+cluster://' -d 'Redis server URL'
complete -c rlock -n $__rlock_conn -l redlock -d 'Every -u is a master: hold the lock on a majority'
complete -c rlock -n $__rlock_conn -l password-file -r -F -d 'Read the Redis password from FILE'
complete -c rlock -n $__rlock_conn -l config -r -F -d 'Read FILE instead of the rlock.conf files'
complete -c rlock -n $__rlock_conn -l connect-timeout -x -a '500ms 1s 5s' -d 'Give up on an unreachable Redis after DUR'
complete -c rlock -n $__rlock_conn -l prefix -x -d 'Prefix of every Redis key'
complete -c rlock -n $__rlock_conn -l tls -d 'TLS even with redis:// URLs'
complete -c rlock -n $__rlock_conn -l tls-cacert -r -F -d 'CA certificates to verify the server with'
complete -c rlock -n $__rlock_conn -l tls-cacertdir -x -a '(__fish_complete_directories)' -d 'Directory of CA certificates'
complete -c rlock -n $__rlock_conn -l tls-cert -r -F -d 'Client certificate (mutual TLS)'
complete -c rlock -n $__rlock_conn -l tls-key -r -F -d 'Private key of the client certificate'
complete -c rlock -n $__rlock_conn -l tls-sni -x -d 'Server name sent and verified'
complete -c rlock -n $__rlock_conn -l tls-insecure -d 'Do not verify the server'
complete -c rlock -n $__rlock_conn -s q -l quiet -d 'Fewer messages'
complete -c rlock -n $__rlock_conn -s v -l verbose -d 'Log what happens'
complete -c rlock -n $__rlock_conn -s h -l help -d 'Show the help'

# Subcommand options and KEY arguments.
complete -c rlock -n '__rlock_in_sub status list' -l json -d 'Print JSON'
complete -c rlock -n '__rlock_in_sub status' -l prometheus -d 'Print the Prometheus text format'
complete -c rlock -n '__rlock_in_sub release' -l force -d 'Break the lock'
complete -c rlock -n '__rlock_in_sub status release' -l redisson -d 'KEY is a lock of Redisson'
complete -c rlock -n '__rlock_in_sub status list release' -x -a '(__rlock_keys)'

# COMMAND after -k KEY (or --), then its own arguments.
complete -c rlock -n __rlock_in_cmd -x -a '(__fish_complete_command)'
complete -c rlock -n __rlock_in_args -x -a '(__rlock_complete_args)'
