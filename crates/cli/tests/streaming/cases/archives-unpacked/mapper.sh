#!/bin/sh
# Lists what the archives became in the working directory and runs programs from them.
while read -r line; do
  echo "line $line"
done
find -H tools lib.zip plain jar second notes -printf '%p\t%y %M\t%l\n' | LC_ALL=C sort
tools/bin/count.py tools/link
./lib.zip/helper.sh one
cat plain/conf/settings.txt second/second.txt notes
