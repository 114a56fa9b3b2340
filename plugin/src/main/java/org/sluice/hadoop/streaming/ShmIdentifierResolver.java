package org.sluice.hadoop.streaming;

import org.apache.hadoop.io.Text;
import org.apache.hadoop.streaming.io.IdentifierResolver;

/**
 * Hadoop Streaming's identifier resolver plus the identifier {@code shm}: text records, as
 * {@code -io text} has them, moved through shared-memory rings when the program links a sluice
 * client ({@code clients/}), and through its pipes otherwise, with the same output.
 *
 * <pre>
 * hadoop jar hadoop-streaming.jar -libjars sluice-plugin.jar \
 *     -D stream.io.identifier.resolver.class=org.sluice.hadoop.streaming.ShmIdentifierResolver \
 *     -io shm -input ... -output ... -mapper map.py -reducer reduce.py
 * </pre>
 *
 * <p>{@code -io shm} sets all four directions; {@code -D stream.map.input=shm} and the other
 * {@code stream.{map,reduce}.{input,output}} keys set one each. See {@link ShmInputWriter}.
 */
public class ShmIdentifierResolver extends IdentifierResolver {
  /** The identifier of text records over shared memory. */
  public static final String SHM_ID = "shm";

  @Override
  public void resolve(String identifier) {
    if (SHM_ID.equalsIgnoreCase(identifier)) {
      setInputWriterClass(ShmInputWriter.class);
      setOutputReaderClass(ShmOutputReader.class);
      setOutputKeyClass(Text.class);
      setOutputValueClass(Text.class);
    } else {
      super.resolve(identifier);
    }
  }
}
