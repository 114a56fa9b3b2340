package org.sluice.yarn;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The JSON lines {@link Submit} prints and reads: flat objects, written and parsed by hand so
 * the jar needs no JSON library (and none that could clash with the cluster's).
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

  /** A line that is not a JSON object of the shape {@link #parse} reads. */
  static final class ParseException extends Exception {
    private static final long serialVersionUID = 1L;

    ParseException(String message) {
      super(message);
    }
  }

  /**
   * Parses one flat JSON object: its members' values are strings, numbers (kept as their
   * text), {@code true}, {@code false}, {@code null} (as Java's null), or arrays of those. A
   * nested object is refused: the commands {@link Submit} reads have none.
   */
  static Map<String, Object> parse(String text) throws ParseException {
    Parser parser = new Parser(text);
    Map<String, Object> object = parser.object();
    parser.space();
    if (parser.at < text.length()) {
      throw parser.error("text after the object");
    }
    return object;
  }

  /** A recursive-descent reader of {@link #parse}'s subset of JSON. */
  private static final class Parser {
    private final String text;
    private int at;

    Parser(String text) {
      this.text = text;
    }

    ParseException error(String what) {
      return new ParseException(what + " at offset " + at);
    }

    void space() {
      while (at < text.length() && " \t\r\n".indexOf(text.charAt(at)) >= 0) {
        at++;
      }
    }

    void expect(char c) throws ParseException {
      space();
      if (at >= text.length() || text.charAt(at) != c) {
        throw error("expected '" + c + "'");
      }
      at++;
    }

    /** Whether the next character (after spaces) is {@code c}; consumes it if so. */
    boolean next(char c) {
      space();
      if (at < text.length() && text.charAt(at) == c) {
        at++;
        return true;
      }
      return false;
    }

    Map<String, Object> object() throws ParseException {
      expect('{');
      Map<String, Object> members = new LinkedHashMap<>();
      if (next('}')) {
        return members;
      }
      do {
        space();
        String name = string();
        expect(':');
        members.put(name, value(true));
      } while (next(','));
      expect('}');
      return members;
    }

    Object value(boolean arrays) throws ParseException {
      space();
      if (at >= text.length()) {
        throw error("expected a value");
      }
      char c = text.charAt(at);
      if (c == '"') {
        return string();
      }
      if (c == '[' && arrays) {
        at++;
        List<Object> items = new ArrayList<>();
        if (next(']')) {
          return items;
        }
        do {
          items.add(value(false));
        } while (next(','));
        expect(']');
        return items;
      }
      for (String word : new String[] {"true", "false", "null"}) {
        if (text.startsWith(word, at)) {
          at += word.length();
          return word.equals("null") ? null : Boolean.valueOf(word);
        }
      }
      int start = at;
      while (at < text.length() && "+-0123456789.eE".indexOf(text.charAt(at)) >= 0) {
        at++;
      }
      if (at == start) {
        throw error("unexpected '" + c + "'");
      }
      return text.substring(start, at);
    }

    String string() throws ParseException {
      if (at >= text.length() || text.charAt(at) != '"') {
        throw error("expected a string");
      }
      at++;
      StringBuilder out = new StringBuilder();
      while (true) {
        if (at >= text.length()) {
          throw error("unterminated string");
        }
        char c = text.charAt(at++);
        if (c == '"') {
          return out.toString();
        }
        if (c != '\\') {
          out.append(c);
          continue;
        }
        if (at >= text.length()) {
          throw error("unterminated escape");
        }
        char e = text.charAt(at++);
        switch (e) {
          case 'n':
            out.append('\n');
            break;
          case 'r':
            out.append('\r');
            break;
          case 't':
            out.append('\t');
            break;
          case 'b':
            out.append('\b');
            break;
          case 'f':
            out.append('\f');
            break;
          case 'u':
            if (at + 4 > text.length()) {
              throw error("short \\u escape");
            }
            try {
              out.append((char) Integer.parseInt(text.substring(at, at + 4), 16));
            } catch (NumberFormatException x) {
              throw error("bad \\u escape");
            }
            at += 4;
            break;
          case '"':
          case '\\':
          case '/':
            out.append(e);
            break;
          default:
            throw error("bad escape '\\" + e + "'");
        }
      }
    }
  }
}
