import sys
for line in sys.stdin:
    sys.stdout.write(line)
# Names longer than Hadoop's limits (128 for a group, 64 for a counter): cut, and these two
# become one counter once cut.
sys.stderr.write("reporter:counter:Gggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggg,NnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnA,1\n")
sys.stderr.write("reporter:counter:Gggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggg,NnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnB,2\n")
sys.stderr.write("reporter:counter:Short,abcdefghijklmnop,5\n")
