package org.sluice.yarn;

import java.util.List;

/**
 * Quoting for the commands of YARN containers.
 *
 * <p>A NodeManager joins a container's command words with spaces and writes them into the
 * container's launch script, as {@code exec /bin/bash -c "COMMAND"}, without any quoting of its
 * own (checked in Hadoop 3.4's {@code ContainerLaunch}). So an argument passes through two
 * shells: the double quotes of the script, then {@code bash -c}. {@link #word} makes any
 * string survive both as one argument.
 *
 * <p>What still cannot pass: the NodeManager replaces {@code <LOG_DIR>}, {@code <CPS>} and
 * {@code {{NAME}}} anywhere in the command before writing it.
 */
final class Shell {
  private Shell() {}

  /**
   * {@code s} as one word of a container's command: unchanged when it holds only characters
   * no shell treats specially, otherwise single-quoted for {@code bash -c}, then escaped for
   * the double quotes around the whole command.
   */
  static String word(String s) {
    if (!s.isEmpty() && s.matches("[A-Za-z0-9_@%+=:,./-]+")) {
      return s;
    }
    // For bash -c: 'it'\''s'.
    String single = "'" + s.replace("'", "'\\''") + "'";
    // For the launch script's "...": a backslash, double quote, dollar sign or backquote
    // would be interpreted there; a backslash before each keeps it literal.
    StringBuilder out = new StringBuilder(single.length() + 8);
    for (int i = 0; i < single.length(); i++) {
      char c = single.charAt(i);
      if (c == '\\' || c == '"' || c == '$' || c == '`') {
        out.append('\\');
      }
      out.append(c);
    }
    return out.toString();
  }

  /** Each of {@code words} through {@link #word}, joined with spaces. */
  static String words(List<String> words) {
    StringBuilder out = new StringBuilder();
    for (String w : words) {
      if (out.length() > 0) {
        out.append(' ');
      }
      out.append(word(w));
    }
    return out.toString();
  }
}
