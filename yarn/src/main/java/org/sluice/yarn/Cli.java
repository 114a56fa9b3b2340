package org.sluice.yarn;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The command line of {@link Submit}: GNU-style long options, each with
 * one value, given as {@code --name VALUE} or {@code --name=VALUE}.
 *
 * <p>Written by hand because Hadoop's own parsers (commons-cli) differ between Hadoop versions
 * and this jar runs with whatever version the cluster has.
 */
final class Cli {
  /** A command line that does not follow the rules; its message says what is wrong. */
  static final class UsageException extends Exception {
    private static final long serialVersionUID = 1L;

    UsageException(String message) {
      super(message);
    }
  }

  private final Map<String, List<String>> values = new HashMap<>();
  private final boolean help;

  /**
   * Parses {@code args}.
   *
   * @param args the command line
   * @param single the options that may be given at most once
   * @param repeated the options that may be given any number of times
   * @throws UsageException on an unknown option, an option without its value, an option given
   *     twice that may not be, or an argument that is not an option
   */
  Cli(String[] args, Set<String> single, Set<String> repeated) throws UsageException {
    boolean wantsHelp = false;
    for (int i = 0; i < args.length; i++) {
      String arg = args[i];
      if (arg.equals("--help") || arg.equals("-h")) {
        wantsHelp = true;
        continue;
      }
      if (!arg.startsWith("--") || arg.length() == 2) {
        throw new UsageException("unexpected argument '" + arg + "'");
      }
      String name;
      String value;
      int eq = arg.indexOf('=');
      if (eq >= 0) {
        name = arg.substring(2, eq);
        value = arg.substring(eq + 1);
      } else {
        name = arg.substring(2);
        if (!single.contains(name) && !repeated.contains(name)) {
          throw new UsageException("unknown option --" + name);
        }
        if (i + 1 >= args.length) {
          throw new UsageException("option --" + name + " needs a value");
        }
        value = args[++i];
      }
      if (!single.contains(name) && !repeated.contains(name)) {
        throw new UsageException("unknown option --" + name);
      }
      List<String> list = values.computeIfAbsent(name, k -> new ArrayList<>());
      if (!list.isEmpty() && single.contains(name)) {
        throw new UsageException("option --" + name + " is given twice");
      }
      list.add(value);
    }
    this.help = wantsHelp;
  }

  /** Whether {@code --help} (or {@code -h}) was given. */
  boolean help() {
    return help;
  }

  /** The value of option {@code name}, or {@code fallback} when it is absent. */
  String get(String name, String fallback) {
    List<String> list = values.get(name);
    return list == null ? fallback : list.get(0);
  }

  /** The value of option {@code name}, which must be given and not be empty. */
  String required(String name) throws UsageException {
    String value = get(name, null);
    if (value == null || value.isEmpty()) {
      throw new UsageException("option --" + name + " is required");
    }
    return value;
  }

  /** Every value of a repeatable option, in order (empty when it is absent). */
  List<String> all(String name) {
    List<String> list = values.get(name);
    return list == null ? Collections.<String>emptyList() : Collections.unmodifiableList(list);
  }

  /**
   * The value of option {@code name} as a whole number of at least {@code min}, or
   * {@code fallback} when it is absent.
   */
  long number(String name, long fallback, long min) throws UsageException {
    String text = get(name, null);
    if (text == null) {
      return fallback;
    }
    long value;
    try {
      value = Long.parseLong(text);
    } catch (NumberFormatException e) {
      throw new UsageException("option --" + name + " takes a whole number, not '" + text + "'");
    }
    if (value < min) {
      throw new UsageException("option --" + name + " must be at least " + min + ", not " + value);
    }
    return value;
  }

  /** Like {@link #number} for a value that must fit in an {@code int}. */
  int intNumber(String name, int fallback, int min) throws UsageException {
    long value = number(name, fallback, min);
    if (value > Integer.MAX_VALUE) {
      throw new UsageException("option --" + name + " is too large: " + value);
    }
    return (int) value;
  }
}
