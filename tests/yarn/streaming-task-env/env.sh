#!/bin/sh
# Prints the variables of this case as ROLE.NAME<TAB>[VALUE] lines, or ROLE.NAME<TAB>(unset);
# the mapper reads its input away, the reducer first passes its input (the mapper's lines) on.
role=$1
if [ "$role" = reduce ]; then cat; else cat >/dev/null; fi
for name in ADMIN_A SHARED M1 M2 BLANK DUP EQ EMPTY UNSET_REF BRACED FORWARD LATE CMD OVERRIDDEN C1 C2 R1; do
    eval "set=\${$name+yes}"
    eval "value=\${$name-}"
    if [ "$set" = yes ]; then
        printf '%s.%s\t[%s]\n' "$role" "$name" "$value"
    else
        printf '%s.%s\t(unset)\n' "$role" "$name"
    fi
done
# The working directory starts LD_LIBRARY_PATH, as a YARN container's does: shown by name.
lib=${LD_LIBRARY_PATH-}
first=${lib%%:*}
rest=${lib#"$first"}
if [ -n "$first" ] && [ "$(cd "$first" 2>/dev/null && pwd -P)" = "$(pwd -P)" ]; then
    first='<working directory>'
fi
printf '%s.LD_LIBRARY_PATH\t[%s%s]\n' "$role" "$first" "$rest"
