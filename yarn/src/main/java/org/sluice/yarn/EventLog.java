package org.sluice.yarn;

import java.io.ByteArrayOutputStream;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * What the application master tells the submitter about its containers: JSON lines (made with
 * {@link Json}) in a file of the application's staging directory, which the master appends to
 * and flushes line by line, and which {@link Submit} reads as it grows and prints on its
 * stdout, the pipe the coordinator reads. The master runs somewhere in the cluster and the
 * coordinator's only line to it is this file, so the coordinator learns through it why YARN
 * stopped a worker's container (its exit status and diagnostics).
 *
 * <p>The events are advisory: a master that cannot write them says so in its log and goes on.
 */
final class EventLog {
  /** The file's name in the application's staging directory. */
  static final String NAME = "events.jsonl";

  private final FSDataOutputStream out;
  private boolean broken;

  private EventLog(FSDataOutputStream out) {
    this.out = out;
  }

  /**
   * The file system to use for {@code file}: on the local one its raw self, whose readers see
   * what was flushed (the checksummed one writes a checksum only when the file is closed).
   */
  private static FileSystem fileSystem(Path file, Configuration conf) throws IOException {
    FileSystem fs = file.getFileSystem(conf);
    return fs instanceof LocalFileSystem ? ((LocalFileSystem) fs).getRaw() : fs;
  }

  /** Creates the log at {@code file}, readable only by the application's user. */
  static EventLog create(Path file, Configuration conf) throws IOException {
    FileSystem fs = fileSystem(file, conf);
    return new EventLog(FileSystem.create(fs, file, new FsPermission((short) 0600)));
  }

  /** Appends one event and makes it visible to readers. */
  synchronized void write(String json) {
    if (broken) {
      return;
    }
    try {
      out.write((json + "\n").getBytes(StandardCharsets.UTF_8));
      out.hflush();
    } catch (IOException e) {
      broken = true;
      Log.info("cannot write container events any more: " + e);
    }
  }

  /** Closes the log. */
  synchronized void close() {
    try {
      out.close();
    } catch (IOException e) {
      Log.info("cannot close the container events: " + e);
    }
  }

  /** Reads a growing event log: each call returns the whole lines added since the last. */
  static final class Tail {
    private final Path file;
    private final Configuration conf;
    private long offset;

    Tail(Path file, Configuration conf) {
      this.file = file;
      this.conf = conf;
    }

    /** The lines added since the last call; none while the file does not exist. */
    List<String> poll() throws IOException {
      List<String> lines = new ArrayList<>();
      ByteArrayOutputStream added = new ByteArrayOutputStream();
      try (FSDataInputStream in = fileSystem(file, conf).open(file)) {
        in.seek(offset);
        byte[] buffer = new byte[8192];
        int n;
        while ((n = in.read(buffer)) > 0) {
          added.write(buffer, 0, n);
        }
      } catch (FileNotFoundException e) {
        return lines;
      }
      byte[] bytes = added.toByteArray();
      int start = 0;
      for (int i = 0; i < bytes.length; i++) {
        if (bytes[i] == '\n') {
          lines.add(new String(bytes, start, i - start, StandardCharsets.UTF_8));
          start = i + 1;
        }
      }
      // A line being written stays for the next call.
      offset += start;
      return lines;
    }
  }
}
