package org.sluice.yarn;

/**
 * The JSON lines {@link Submit} prints: flat objects of string members, written by hand so the
 * jar needs no JSON library (and none that could clash with the cluster's).
 *
 * <p>The output is plain ASCII: every character outside it is written as a {@code \\uXXXX}
 * escape, so the lines mean the same whatever the JVM's default charset.
 */
final class Json {
  private Json() {}

  /**
   * One JSON object from alternating member names and values, in that order:
   * {@code object("event", "state", "state", "RUNNING")} is
   * {@code {"event":"state","state":"RUNNING"}}. A null value is written as an empty string.
   */
  static String object(String... namesAndValues) {
    if (namesAndValues.length % 2 != 0) {
      throw new IllegalArgumentException("names and values must come in pairs");
    }
    StringBuilder out = new StringBuilder("{");
    for (int i = 0; i < namesAndValues.length; i += 2) {
      if (i > 0) {
        out.append(',');
      }
      string(out, namesAndValues[i]);
      out.append(':');
      string(out, namesAndValues[i + 1] == null ? "" : namesAndValues[i + 1]);
    }
    return out.append('}').toString();
  }

  /** Appends {@code s} as a JSON string (RFC 8259), quotes included. */
  static void string(StringBuilder out, String s) {
    out.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"':
          out.append("\\\"");
          break;
        case '\\':
          out.append("\\\\");
          break;
        case '\n':
          out.append("\\n");
          break;
        case '\r':
          out.append("\\r");
          break;
        case '\t':
          out.append("\\t");
          break;
        case '\b':
          out.append("\\b");
          break;
        case '\f':
          out.append("\\f");
          break;
        default:
          if (c < 0x20 || c > 0x7e) {
            // Control characters must be escaped; the rest of Unicode is, to stay ASCII
            // (a character beyond the BMP becomes its two UTF-16 escapes, as JSON allows).
            out.append(String.format("\\u%04x", (int) c));
          } else {
            out.append(c);
          }
      }
    }
    out.append('"');
  }
}
