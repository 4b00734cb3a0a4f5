# bash completion for rlock(1)                             -*- shell-script -*-
# SPDX-License-Identifier: MIT
# Shaped like util-linux's bash-completion/flock; needs nothing from the
# bash-completion package, but hands COMMAND's arguments to its completion
# when that package is loaded.

# Lock names held now: the first column of `rlock list`. Quiet and quick,
# so a missing or slow Redis never blocks the shell; the connection
# options already on the line (-u, --prefix, --password-file, --config,
# --redlock, the TLS ones) are used. With --redlock, list prints each master's locks under a header
# line without a tab: only the lines with one are locks, once each.
_rlock_keys()
{
	local -a words conn=()
	local i w
	# Split on blanks only: COMP_WORDS splits URLs at ':' and '='.
	read -ra words <<< "${COMP_LINE:0:COMP_POINT}"
	for ((i = 1; i < ${#words[@]}; i++)); do
		w=${words[i]}
		case $w in
		-u|--url|--prefix|--password-file|--config|--tls-cacert|\
		--tls-cacertdir|--tls-cert|--tls-key|--tls-sni)
			conn+=("$w" "${words[i + 1]}")
			((i++))
			;;
		--url=*|--prefix=*|--password-file=*|--config=*|-u?*|--redlock|--tls|\
		--tls-cacert=*|--tls-cacertdir=*|--tls-cert=*|--tls-key=*|\
		--tls-sni=*|--tls-insecure)
			conn+=("$w")
			;;
		--)
			break
			;;
		esac
	done
	timeout 2 "${COMP_WORDS[0]}" list --connect-timeout 0.5 \
		"${conn[@]}" 2>/dev/null |
		awk -F '\t' 'NF > 1 && !seen[$1]++ { print $1 }'
}

# COMPREPLY from compgen ARGS, one candidate a line.
_rlock_reply()
{
	mapfile -t COMPREPLY < <(compgen "$@")
}

# COMPREPLY: the held keys that start with $cur, quoted for the shell.
_rlock_reply_keys()
{
	local k
	COMPREPLY=()
	while IFS= read -r k; do
		[[ -n $k && $k == "$cur"* ]] && COMPREPLY+=("$(printf '%q' "$k")")
	done < <(_rlock_keys)
}

# The option at word i takes a value: step over it (and over the "=" of
# --opt=value, which COMP_WORDS splits into its own word).
_rlock_skip_value()
{
	if [[ ${COMP_WORDS[i + 1]} == = ]]; then
		((i += 2))
	else
		((i++))
	fi
}

_rlock_module()
{
	local cur prev i w sub='' key=0 cmd=0 opts
	COMPREPLY=()
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD - 1]}
	# --opt=value arrives as three words: --opt, =, value.
	if [[ $cur == = ]]; then
		cur=''
	elif [[ $prev == = ]] && ((COMP_CWORD > 1)); then
		prev=${COMP_WORDS[COMP_CWORD - 2]}
	fi

	# Where are we: options, a subcommand, or COMMAND (from word cmd on)?
	for ((i = 1; i < COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		case $w in
		--)
			cmd=$((i + 1))
			break
			;;
		-k|--key)
			key=1
			_rlock_skip_value
			;;
		-w|--timeout|-l|--lease|-E|--conflict-exit-code|-N|--limit|\
		-c|--command|--on-lost|--kill-after|--min-hold|--max-hold|\
		-u|--url|--password-file|--config|--connect-timeout|--prefix|\
		--tls-cacert|--tls-cacertdir|--tls-cert|--tls-key|--tls-sni|--pid)
			_rlock_skip_value
			;;
		--key=*)
			key=1
			;;
		--*)
			;;
		-?*)
			# A bundle such as -nk KEY or -nkKEY: the first letter
			# that takes a value takes the rest, or the next word.
			local j=1 c
			while ((j < ${#w})); do
				c=${w:j:1}
				case $c in
				[kwlENcu])
					[[ $c == k ]] && key=1
					((j == ${#w} - 1)) && ((i++))
					break
					;;
				esac
				((j++))
			done
			;;
		*)
			# lock and unlock take options after them.
			if [[ -z $sub && ($w == lock || $w == unlock) ]] &&
				((!key)); then
				sub=$w
				continue
			fi
			if ((key)); then
				cmd=$i
			else
				sub=$w
			fi
			break
			;;
		esac
	done
	[[ $sub == lock || $sub == unlock ]] && ((cmd)) && return 0

	# COMMAND and its arguments: complete them as the command would.
	if ((cmd)); then
		if ((COMP_CWORD == cmd)); then
			_rlock_reply -c -- "$cur"
		elif declare -F _command_offset >/dev/null; then
			_command_offset "$cmd"
		else
			compopt -o filenames
			_rlock_reply -f -- "$cur"
		fi
		return 0
	fi

	case $prev in
	'-k'|'--key')
		_rlock_reply_keys
		return 0
		;;
	'-w'|'--timeout')
		_rlock_reply -W "0 30s 5m 1h" -- "$cur"
		return 0
		;;
	'-l'|'--lease')
		_rlock_reply -W "10s 30s 2m 5m" -- "$cur"
		return 0
		;;
	'--kill-after')
		_rlock_reply -W "5s 10s 30s" -- "$cur"
		return 0
		;;
	'--min-hold')
		_rlock_reply -W "30s 1m 5m" -- "$cur"
		return 0
		;;
	'--max-hold')
		_rlock_reply -W "10m 1h 2h" -- "$cur"
		return 0
		;;
	'--connect-timeout')
		_rlock_reply -W "500ms 1s 5s" -- "$cur"
		return 0
		;;
	'--on-lost')
		_rlock_reply -W "term kill ignore" -- "$cur"
		return 0
		;;
	'--pid')
		_rlock_reply -W "$(ps -eo pid= 2>/dev/null)" -- "$cur"
		return 0
		;;
	'-u'|'--url')
		compopt -o nospace
		_rlock_reply -W "redis:// rediss:// unix:// redis+sentinel://
			rediss+sentinel:// redis+cluster:// rediss+cluster://" \
			-- "$cur"
		return 0
		;;
	'--password-file'|'--config'|'--tls-cacert'|'--tls-cert'|'--tls-key')
		compopt -o filenames
		_rlock_reply -f -- "$cur"
		return 0
		;;
	'--tls-cacertdir')
		compopt -o filenames
		_rlock_reply -d -- "$cur"
		return 0
		;;
	'-c'|'--command')
		compopt -o bashdefault
		_rlock_reply -c -- "$cur"
		return 0
		;;
	'-E'|'--conflict-exit-code'|'-N'|'--limit'|'--prefix'|'--tls-sni'|\
	'-h'|'--help'|'-V'|'--version')
		return 0
		;;
	esac

	opts="--url --redlock --password-file --config --connect-timeout --prefix
		--tls --tls-cacert --tls-cacertdir --tls-cert --tls-key --tls-sni
		--tls-insecure --quiet --verbose --help"
	case $sub in
	status)
		case $cur in
		-*)
			_rlock_reply -W "--json --prometheus --redisson $opts" -- "$cur"
			;;
		*)
			_rlock_reply_keys
			;;
		esac
		return 0
		;;
	list)
		case $cur in
		-*)
			_rlock_reply -W "--json $opts" -- "$cur"
			;;
		*)
			_rlock_reply_keys
			;;
		esac
		return 0
		;;
	release)
		case $cur in
		-*)
			_rlock_reply -W "--force --redisson $opts" -- "$cur"
			;;
		*)
			_rlock_reply_keys
			;;
		esac
		return 0
		;;
	unlock)
		[[ $cur == -* ]] &&
			_rlock_reply -W "--key --quiet --verbose --help" -- "$cur"
		return 0
		;;
	lock)
		;;
	?*)
		return 0
		;;
	esac

	case $cur in
	-*)
		opts="--key
			--command
			--nonblock
			--timeout
			--lease
			--conflict-exit-code
			--limit
			--shared
			--exclusive
			--fair
			--on-lost
			--kill-after
			--min-hold
			--max-hold
			--syslog
			--redisson
			--pid
			--export
			--url
			--redlock
			--password-file
			--config
			--connect-timeout
			--prefix
			--tls
			--tls-cacert
			--tls-cacertdir
			--tls-cert
			--tls-key
			--tls-sni
			--tls-insecure
			--quiet
			--verbose
			--help
			--version"
		_rlock_reply -W "$opts" -- "$cur"
		return 0
		;;
	esac
	if [[ -n $sub ]]; then
		return 0
	elif ((!key)); then
		_rlock_reply -W "status list release lock unlock" -- "$cur"
	else
		_rlock_reply -c -- "$cur"
	fi
	return 0
}
complete -F _rlock_module rlock
