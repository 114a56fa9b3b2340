#!/usr/bin/env python3
import sys
sys.stdin.read()
for line in ['no tab', '', 'trailing tab\t', '\tleading', 'a\tb\tc', 'spaces only   ']:
    print(line)
