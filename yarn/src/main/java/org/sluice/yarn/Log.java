package org.sluice.yarn;

import java.net.URL;
import java.text.SimpleDateFormat;
import java.util.Date;

/**
 * The human-readable log of {@link Submit} (and its {@link Master}): lines on stderr. (Submit's
 * stdout carries its JSON events only.)
 */
final class Log {
  private static volatile String prefix = "sluice-yarn";

  private Log() {}

  /**
   * Names the program in every line and quiets Hadoop's own logging: unless the JVM was started
   * with {@code -Dlog4j.configuration=...}, log4j reads the configuration inside this jar
   * (warnings and errors on stderr) instead of the cluster's {@code log4j.properties}, which
   * usually logs every RPC retry and client start at INFO. Must run before any Hadoop class
   * logs anything, since log4j reads its configuration once.
   */
  static void setup(String program) {
    prefix = program;
    if (System.getProperty("log4j.configuration") == null) {
      URL config = Log.class.getResource("log4j.properties");
      if (config != null) {
        System.setProperty("log4j.configuration", config.toString());
      }
    }
  }

  /** Writes one line: time, program, message. */
  static void info(String message) {
    String time = new SimpleDateFormat("HH:mm:ss.SSS").format(new Date());
    System.err.println(time + " " + prefix + ": " + message);
  }
}
