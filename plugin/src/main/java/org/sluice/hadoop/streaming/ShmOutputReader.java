package org.sluice.hadoop.streaming;

import org.apache.hadoop.streaming.io.TextOutputReader;

/**
 * Hadoop's {@link TextOutputReader}, unchanged: it reads the program's output from whatever
 * {@code PipeMapRed} holds as the program's output stream, which {@link ShmInputWriter} (created
 * just before it) has pointed at the output ring when the program attached. Being this class
 * rather than Hadoop's is what tells the writer that this direction may use a ring too.
 */
public class ShmOutputReader extends TextOutputReader {}
