#!/bin/sh
# bot.sh: the quickstart's "model", a tiny offline program so the example
# needs no API key and no network. The exec target writes one item as JSON on
# standard input ({"id":…,"input":"…",…}); whatever this prints on standard
# output is the item's output (valid JSON stays JSON, anything else is text).
# A non-zero exit status is an error of the item.
#
# Some answers are wrong on purpose, so the report has something to show:
# they are low scores (data), not errors, so the run still passes its gate.
read -r item
question=$(printf '%s\n' "$item" | sed -n 's/.*"input":"\([^"]*\)".*/\1/p')

case "$question" in
# geography
*"capital of France"*) echo "Paris" ;;
*"capital of Japan"*) echo "Tokyo" ;;
*"capital of Australia"*) echo "Sydney" ;; # wrong: Canberra
*"capital of Canada"*) echo "Ottawa" ;;
*"capital of Brazil"*) echo "Brasilia" ;;
*"capital of Kenya"*) echo "Nairobi" ;;
*"longest river"*) echo "The Nile" ;;
*"largest ocean"*) echo "pacific" ;;
# math: a bare number on standard output is a JSON number
*"2 + 2"*) echo 4 ;;
*"7 * 8"*) echo 56 ;;
*"17 * 3"*) echo 41 ;; # wrong: 51
*"100 / 4"*) echo 25 ;;
*"square root of 81"*) echo 9 ;;
*"12 - 20"*) echo -8 ;;
*"2 to the power of 10"*) echo 1024 ;;
*"half of 3"*) echo 1.5 ;;
# structured answers: a JSON object on standard output is a JSON object
*"Italy as JSON"*) echo '{"country": "Italy", "capital": "Rome"}' ;;
*"Spain as JSON"*) echo '{"country": "Spain", "capital": "Madrid"}' ;;
*"Egypt as JSON"*) echo '{"country": "Egypt", "capital": "Alexandria"}' ;; # wrong
*"Peru as JSON"*) echo '{"country": "Peru", "capital": "Lima"}' ;;
*"user record"*) echo '{"name": "Ada", "id": 7}' ;;
*"empty list"*) echo '[]' ;;
# support answers
*"reset my password"*) echo "Open Settings, then Security, then Reset password." ;;
*"change my email"*) echo "Go to Settings, then Profile, and edit the email field." ;;
*"cancel my subscription"*) echo "Open Billing and choose Cancel plan." ;;
*"refund"*) echo "Refunds are processed within 5 business days." ;;
*"opening hours"*) echo "We are open 9 to 5, Monday to Friday" ;;
*"talk to a human"*) echo "I am sorry, I cannot help with that." ;; # unhelpful on purpose
# untagged odds and ends
*"Say hello"*) echo "Hello!" ;;
*"colour of the sky"*) echo "Blue" ;;
*"opposite of hot"*) echo "cold" ;;
*) echo "I don't know." ;;
esac
