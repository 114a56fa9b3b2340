import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What Hadoop's {@code grep} example counts, without the job around it: each line of the file
 * {@code args[1]} (split on {@code \n}, decoded as {@code Text.toString()} decodes it) is
 * matched with each pattern of the file {@code args[0]} (one per line) as {@code RegexMapper}
 * matches it ({@code while (matcher.find())}, the whole match). Prints {@code N<TAB>match} for
 * every match of pattern N, in UTF-8.
 */
public class RegexFind {
  public static void main(String[] args) throws Exception {
    List<String> patterns = Files.readAllLines(Path.of(args[0]), StandardCharsets.UTF_8);
    byte[] input = Files.readAllBytes(Path.of(args[1]));
    String text = new String(input, StandardCharsets.UTF_8);
    // The line after a last newline is none, as Hadoop's LineRecordReader reads it.
    if (text.endsWith("\n")) {
      text = text.substring(0, text.length() - 1);
    }
    String[] lines = text.split("\n", -1);
    PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
    for (int n = 0; n < patterns.size(); n++) {
      Pattern pattern = Pattern.compile(patterns.get(n));
      for (String line : lines) {
        Matcher matcher = pattern.matcher(line);
        while (matcher.find()) {
          out.print(n + "\t" + matcher.group() + "\n");
        }
      }
    }
    out.flush();
  }
}
