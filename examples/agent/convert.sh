#!/bin/sh
# convert.sh: the convert_currency tool of the agent example. evalrun runs
# it (an exec target, the tool's `run`) for every convert_currency call the
# model makes that the item does not mock. Standard input is one JSON
# object whose "input" is the call's arguments:
#
#   {"id":"convert-eur-usd","input":{"amount":100,"from":"EUR","to":"USD"}}
#
# Standard output (JSON) is the tool's result, sent back to the model. A
# non-zero exit is the tool's error: evalrun sends "error: <message>" back
# to the model instead and records it in the trajectory; the item goes on.
# The rates are fixed, so the example gives the same answers every time.
read -r call
field() {
	printf '%s\n' "$call" | sed -n "s/.*\"$1\"[[:space:]]*:[[:space:]]*\"\{0,1\}\([^\",}]*\).*/\1/p"
}
amount=$(field amount)
from=$(field from)
to=$(field to)

# Units of each currency per euro.
rate() {
	case "$1" in
	EUR) echo 1 ;;
	USD) echo 1.08 ;;
	GBP) echo 0.85 ;;
	CHF) echo 0.95 ;;
	NOK) echo 11.7 ;;
	JPY) echo 162 ;;
	*) return 1 ;;
	esac
}

case "$amount" in
'' | *[!0-9.]* | *.*.*)
	echo "amount must be a positive number, got \"$amount\"" >&2
	exit 1
	;;
esac
for c in "$from" "$to"; do
	if ! rate "$c" >/dev/null; then
		echo "unknown currency \"$c\" (known: EUR, USD, GBP, CHF, NOK, JPY)" >&2
		exit 1
	fi
done
awk -v a="$amount" -v f="$(rate "$from")" -v t="$(rate "$to")" -v from="$from" -v to="$to" \
	'BEGIN { printf "{\"amount\": %s, \"from\": \"%s\", \"to\": \"%s\", \"result\": %.2f}\n", a, from, to, a / f * t }'
