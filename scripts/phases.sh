# Phase timing for the README's two commands (sourced by scripts/quickstart.sh and scripts/test.sh).
#   phases_begin NAME   closes the running phase and starts NAME, printing "<tag>: phase NAME";
#   phases_report       (installed as the EXIT trap by phases_start) prints each phase's wall time,
#                       the total, and "<tag>: <WORD>" or "<tag>: FAILED in phase P (exit N)".
#   phases_start TAG WORD  sets the tag its lines start with and the word of success, and installs
#                       the trap.
phases_tag="" phases_word="" phases_name="" phases_since=0 phases_times=()

phases_start() {
  phases_tag="$1" phases_word="$2"
  trap phases_report EXIT
}

phases_finish() {
  if [ -n "$phases_name" ]; then
    local s=$((SECONDS - phases_since))
    phases_times+=("$(printf '  %-11s %3dm%02ds' "$phases_name" $((s / 60)) $((s % 60)))")
    phases_name=""
  fi
}

phases_begin() {
  phases_finish
  phases_name="$1" phases_since=$SECONDS
  echo "$phases_tag: phase $phases_name"
}

phases_report() {
  local status=$? failed="$phases_name"
  phases_finish
  echo "$phases_tag: phase times"
  printf '%s\n' "${phases_times[@]}"
  printf '  %-11s %3dm%02ds\n' total $((SECONDS / 60)) $((SECONDS % 60))
  if [ "$status" -eq 0 ]; then
    echo "$phases_tag: $phases_word"
  else
    echo "$phases_tag: FAILED in phase ${failed:-?} (exit $status)"
  fi
}
