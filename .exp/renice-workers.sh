#!/bin/bash
# renice every thread of the writer node processes except their main threads
for p in $(pgrep -f "roles writer,committer"); do
  for t in /proc/$p/task/*; do tid=${t##*/}; [ "$tid" = "$p" ] && continue; renice -n ${1:-10} -p $tid > /dev/null; done
done
