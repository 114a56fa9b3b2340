#!/bin/sh
cat > /dev/null
cat x l qA
