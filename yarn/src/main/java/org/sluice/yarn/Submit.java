package org.sluice.yarn;

import java.io.BufferedReader;
import java.io.File;
import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.FileNotFoundException;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.UnsupportedEncodingException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsAction;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.io.IOUtils;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.util.ShutdownHookManager;
import org.apache.hadoop.yarn.api.records.ApplicationAttemptId;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.api.records.ApplicationReport;
import org.apache.hadoop.yarn.api.records.ApplicationSubmissionContext;
import org.apache.hadoop.yarn.api.records.ContainerLaunchContext;
import org.apache.hadoop.yarn.api.records.FinalApplicationStatus;
import org.apache.hadoop.yarn.api.records.LocalResource;
import org.apache.hadoop.yarn.api.records.LocalResourceVisibility;
import org.apache.hadoop.yarn.api.records.YarnApplicationAttemptState;
import org.apache.hadoop.yarn.api.records.YarnApplicationState;
import org.apache.hadoop.yarn.client.api.YarnClient;
import org.apache.hadoop.yarn.client.api.YarnClientApplication;
import org.apache.hadoop.yarn.conf.YarnConfiguration;

/**
 * Runs a YARN application for a sluice job and is its master: it stages the files the
 * containers need, submits an application whose master is not a container but this JVM (YARN's
 * "unmanaged" master, {@link Master}), and then only brokers containers for the job's
 * coordinator, which decides everything.
 *
 * <p>The {@code sluice} command runs it as a child process, with the cluster's classpath:
 * {@code java -cp "$(hadoop classpath):sluice-yarn.jar" org.sluice.yarn.Submit OPTIONS} (see
 * {@link #USAGE}), and the two talk over its stdin and stdout in JSON lines, one object per
 * line, flushed at once (yarn/README.md has the whole protocol). Out, on stdout:
 *
 * <pre>
 * {"event":"submitted","application":"application_1700000000000_0001"}
 * {"event":"state","state":"ACCEPTED"}            (on every change of state)
 * {"event":"registered","max_memory_mb":"8192","max_vcores":"4"}
 * {"event":"allocated","container":"container_...","node":"HOST:PORT","host":"HOST",
 *  "memory_mb":"1024","vcores":"2"}
 * {"event":"container_started","container":"...","node":"..."}
 * {"event":"container_not_started","container":"...","node":"...","diagnostics":"..."}
 * {"event":"container_ended","container":"...","node":"...","exit_status":"137",
 *  "diagnostics":"..."}
 * {"event":"finished","state":"FINISHED","final_status":"SUCCEEDED","diagnostics":"..."}
 * {"event":"error","message":"..."}               (before finished, when Submit fails)
 * </pre>
 *
 * <p>In, on stdin, once registered:
 *
 * <pre>
 * {"command":"request","memory_mb":1024,"vcores":2,"nodes":["h1","h2"]}
 * {"command":"launch","container":"container_...","args":["worker","--connect","..."]}
 * {"command":"release","container":"container_..."}
 * {"command":"finish","final_status":"SUCCEEDED","diagnostics":"..."}
 * {"command":"kill"}
 * </pre>
 *
 * <p>When stdin ends, or a kill arrives, Submit kills the application (if it has not ended yet)
 * and reports how it ended. So the application never outlives the {@code sluice} process that
 * started it. Human-readable messages go to stderr.
 *
 * <p>Exit status: 0 when the application's final status is SUCCEEDED, 1 when it is anything
 * else or Submit failed, 2 on a bad command line.
 *
 * <p>What it stages, under the staging root ({@code --staging-root}, by default
 * {@code /user/USER/.sluice-staging} on the default file system):
 *
 * <ul>
 *   <li>{@code bin/sluice-HASH}: the sluice binary, named after the first 16 hex digits of its
 *       SHA-256, mode 0755, uploaded once per content and kept for later applications. It is a
 *       PUBLIC resource, which NodeManagers download once and share between applications and
 *       users; YARN allows that only when the file is world-readable and every directory
 *       above it world-executable. Submit creates the staging root and {@code bin} with mode
 *       0755; when a directory above them is not world-executable, the binary is localized as
 *       a PRIVATE resource instead (shared between the applications of one user), with a
 *       warning on stderr.
 *   <li>{@code APPLICATION_ID/}, mode 0700: the secret ({@code secret}, mode 0600, a PRIVATE
 *       resource). Deleted when the application ends.
 * </ul>
 *
 * <p>The binary is reused only from where no one but the submitting user can write: the
 * staging root and {@code bin} must belong to the user and be closed to writes by its group
 * and others, and the file {@code sluice-HASH} too, else it is replaced. When the directories
 * are not the user's own (a shared staging root), the binary is staged in {@code
 * APPLICATION_ID/} instead, as an APPLICATION resource, and deleted with it.
 */
public final class Submit {
  /** The command line, as {@code --help} prints it. */
  static final String USAGE =
      "usage: java -cp \"$(hadoop classpath):sluice-yarn.jar\" org.sluice.yarn.Submit OPTIONS\n"
          + "\n"
          + "  --name NAME                 application name (required)\n"
          + "  --queue QUEUE               YARN queue (default: default)\n"
          + "  --binary PATH               the local sluice binary (required)\n"
          + "  --secret-file PATH          the job's secret, a local file (required)\n"
          + "  --staging-root URI          where files are staged\n"
          + "                              (default: FS/user/USER/.sluice-staging)\n"
          + "\n"
          + "Is the application's master: prints JSON events on stdout and follows JSON\n"
          + "commands on stdin (request, launch, release, finish, kill); kills the application\n"
          + "when stdin ends. Exit status: 0 if the application SUCCEEDED, 1 if not, 2 on a bad\n"
          + "command line.\n";

  private static final List<String> SINGLE =
      Arrays.asList("name", "queue", "binary", "secret-file", "staging-root");
  private static final List<String> REPEATED = Collections.<String>emptyList();

  /** The application's type in the ResourceManager (what {@code yarn app -list} shows). */
  static final String APPLICATION_TYPE = "SLUICE";

  /** How often the application's state is polled. */
  private static final long POLL_MILLIS = 200;

  /** How long the application's attempt may take to be launched, in milliseconds. */
  private static final long LAUNCH_WAIT_MILLIS = 120_000;

  private static PrintStream events;
  /** The one Submit of this JVM, for {@link #kill}. */
  private static volatile Submit current;

  private final Options options;
  private final YarnConfiguration conf = new YarnConfiguration();
  private final CountDownLatch killRequest = new CountDownLatch(1);
  private volatile String killReason;
  private YarnClient yarn;
  private FileSystem fs;
  private volatile ApplicationId appId;
  private volatile Path appDir;
  private volatile boolean submitted;
  private volatile boolean finished;
  private YarnApplicationState lastState;
  /** The master, once registered. */
  private volatile Master master;

  private Submit(Options options) {
    this.options = options;
  }

  /**
   * Runs Submit with the command line {@code args} and exits the JVM with its status (the
   * YARN client leaves non-daemon threads behind that would keep it alive).
   */
  public static void main(String[] args) {
    Log.setup("sluice-yarn submit");
    try {
      events = new PrintStream(new FileOutputStream(FileDescriptor.out), true, "US-ASCII");
    } catch (UnsupportedEncodingException e) {
      throw new AssertionError(e);
    }
    // Anything Hadoop prints on System.out goes to stderr: stdout carries the events alone.
    System.setOut(System.err);
    Options options;
    try {
      Cli cli = new Cli(args, new HashSet<>(SINGLE), new HashSet<>(REPEATED));
      if (cli.help()) {
        events.print(USAGE);
        events.flush();
        System.exit(0);
      }
      options = new Options(cli);
    } catch (Cli.UsageException e) {
      emit(Json.object("event", "error", "message", e.getMessage()));
      System.err.println("sluice-yarn submit: " + e.getMessage());
      System.err.println("Try --help.");
      System.exit(2);
      return;
    }
    int status;
    Submit submit = new Submit(options);
    current = submit;
    try {
      status = submit.run();
    } catch (Throwable e) {
      String message = e.getMessage() == null ? e.toString() : e.getMessage();
      Log.info("failed: " + e);
      emit(Json.object("event", "error", "message", message));
      submit.abandon("its submitter failed: " + message, false);
      status = 1;
    }
    System.exit(status);
  }

  /** Whether the last event (finished) was printed: nothing more is. */
  private static boolean ended;

  /**
   * Prints one event line on stdout, flushed; after the finished event, nothing (the clients'
   * callbacks may still report a container as they stop).
   */
  static synchronized void emit(String json) {
    if (ended) {
      Log.info("not reported after the end: " + json);
      return;
    }
    events.println(json);
    events.flush();
  }

  /** Prints the finished event: the last. */
  private static synchronized void emitLast(String json) {
    emit(json);
    ended = true;
  }

  /** Submits the application, follows it to its end and returns the exit status. */
  private int run() throws Exception {
    String user = UserGroupInformation.getCurrentUser().getShortUserName();
    Path root =
        options.stagingRoot != null
            ? new Path(options.stagingRoot)
            : new Path("/user/" + user + "/.sluice-staging");
    fs = root.getFileSystem(conf);
    root = fs.makeQualified(root);

    Thread stdin = new Thread(this::watchStdin, "stdin");
    stdin.setDaemon(true);
    stdin.start();
    // Through Hadoop's hook manager, to run before the one that closes the file systems.
    ShutdownHookManager.get()
        .addShutdownHook(
            () -> abandon("its submitter was stopped", true),
            FileSystem.SHUTDOWN_HOOK_PRIORITY + 10);

    yarn = YarnClient.createYarnClient();
    yarn.init(conf);
    yarn.start();
    YarnClientApplication app = yarn.createApplication();
    ApplicationSubmissionContext context = app.getApplicationSubmissionContext();
    appId = context.getApplicationId();

    // The application's own directory, then the binary: shared by every application when
    // no one but this user can write where it is kept, else staged for this one alone.
    makeDirectory(root, (short) 0755);
    appDir = new Path(root, appId.toString());
    makeDirectory(appDir, (short) 0700);
    Path binDir = new Path(root, "bin");
    makeDirectory(binDir, (short) 0755);
    String notOwn = whyNotOwn(root, user);
    if (notOwn == null) {
      notOwn = whyNotOwn(binDir, user);
    }
    FileStatus binary;
    LocalResourceVisibility binaryVisibility = LocalResourceVisibility.PUBLIC;
    if (notOwn == null) {
      binary = uploadBinary(binDir, options.binary, user);
      String notPublic = whyNotPublic(binary.getPath());
      if (notPublic != null) {
        Log.info("warning: the sluice binary is localized as a PRIVATE resource, not a PUBLIC "
            + "one (cached per user, not shared between users), because " + notPublic);
        binaryVisibility = LocalResourceVisibility.PRIVATE;
      }
    } else {
      Log.info("warning: the sluice binary is staged for this application alone, not kept "
          + "for later ones, because " + notOwn);
      binary = upload(options.binary, new Path(appDir, "sluice"), (short) 0700);
      binaryVisibility = LocalResourceVisibility.APPLICATION;
    }
    FileStatus secret = upload(options.secret, new Path(appDir, "secret"), (short) 0600);
    Map<String, LocalResource> resources = new HashMap<>();
    resources.put("sluice", Resources.file(binary, binaryVisibility));
    resources.put("secret", Resources.file(secret, LocalResourceVisibility.PRIVATE));

    context.setApplicationName(options.name);
    context.setQueue(options.queue);
    context.setApplicationType(APPLICATION_TYPE);
    // The master is this JVM: no container of its own, and no second attempt (the
    // coordinator that asked for the workers is here, and would not be in a second one).
    context.setUnmanagedAM(true);
    context.setMaxAppAttempts(1);
    // With Kerberos: the file system's delegation tokens, for the workers to reach it. In the
    // master's launch context too, since the ResourceManager renews (and at the end cancels)
    // the tokens given there, whatever the master's kind.
    ByteBuffer workerTokens = Tokens.forWorkers(conf, fs);
    context.setAMContainerSpec(
        ContainerLaunchContext.newInstance(
            Collections.<String, LocalResource>emptyMap(),
            Collections.<String, String>emptyMap(),
            Collections.<String>emptyList(), null,
            workerTokens == null ? null : workerTokens.duplicate(), null));

    if (killRequest.getCount() == 0) {
      throw new IOException("not submitted: " + killReason);
    }
    yarn.submitApplication(context);
    submitted = true;
    Log.info("submitted " + appId + " (" + options.name + ") to queue " + options.queue);
    emit(Json.object("event", "submitted", "application", appId.toString()));
    if (awaitLaunch()) {
      // The ResourceManager lets the master in with the attempt's AMRM token.
      UserGroupInformation.getCurrentUser().addToken(yarn.getAMRMToken(appId));
      Master registered = new Master(conf, resources, workerTokens);
      master = registered;
      registered.register();
      Log.info("registered as the master of " + appId);
    }
    return follow();
  }

  /**
   * Waits until the application's attempt is launched (an unmanaged master registers then),
   * reporting the application's states. Returns false when the application ended, or a kill
   * was asked for, before that.
   */
  private boolean awaitLaunch() throws Exception {
    long deadline = System.currentTimeMillis() + LAUNCH_WAIT_MILLIS;
    while (true) {
      ApplicationReport report = yarn.getApplicationReport(appId);
      synchronized (this) {
        if (finished || isEnd(report.getYarnApplicationState())) {
          return false;
        }
        report(report);
      }
      if (killRequest.getCount() == 0) {
        return false;
      }
      ApplicationAttemptId attempt = report.getCurrentApplicationAttemptId();
      if (attempt != null
          && yarn.getApplicationAttemptReport(attempt).getYarnApplicationAttemptState()
              == YarnApplicationAttemptState.LAUNCHED) {
        return true;
      }
      if (System.currentTimeMillis() > deadline) {
        throw new IOException("the application's attempt was not launched within "
            + LAUNCH_WAIT_MILLIS / 1000 + " s (state " + report.getYarnApplicationState()
            + "; is the queue full?)");
      }
      killRequest.await(POLL_MILLIS, TimeUnit.MILLISECONDS);
    }
  }

  /**
   * Polls the application until it ends, printing its states, and kills it when asked to.
   * Returns the exit status.
   */
  private int follow() throws Exception {
    boolean killSent = false;
    while (true) {
      ApplicationReport report = yarn.getApplicationReport(appId);
      synchronized (this) {
        if (finished) {
          return 1; // stopped meanwhile: the shutdown hook reported the end
        }
        if (report(report)) {
          // The secret first: stopping the master may wait on unreachable NodeManagers.
          deleteAppDir();
          stopMaster();
          return report.getFinalApplicationStatus() == FinalApplicationStatus.SUCCEEDED ? 0 : 1;
        }
      }
      if (killRequest.getCount() == 0 && !killSent) {
        Log.info("killing " + appId + ": " + killReason);
        // Returns once the ResourceManager has killed it; the next report says KILLED.
        yarn.killApplication(appId, "killed by sluice: " + killReason);
        stopMaster();
        killSent = true;
        continue;
      }
      killRequest.await(POLL_MILLIS, TimeUnit.MILLISECONDS);
    }
  }

  /**
   * Prints the application's state if it changed, and the finished event if it ended (then
   * nothing more). Returns whether it ended.
   */
  private synchronized boolean report(ApplicationReport report) {
    YarnApplicationState state = report.getYarnApplicationState();
    if (state != lastState) {
      emit(Json.object("event", "state", "state", state.name()));
      lastState = state;
    }
    if (!isEnd(state)) {
      return false;
    }
    finished = true;
    FinalApplicationStatus status = report.getFinalApplicationStatus();
    Log.info(appId + " ended: " + state + ", " + status);
    emitLast(Json.object("event", "finished", "state", state.name(),
        "final_status", status.name(), "diagnostics", report.getDiagnostics()));
    return true;
  }

  /** Whether an application in {@code state} has ended. */
  private static boolean isEnd(YarnApplicationState state) {
    return state == YarnApplicationState.FINISHED
        || state == YarnApplicationState.FAILED
        || state == YarnApplicationState.KILLED;
  }

  /**
   * Reads commands from stdin and hands them to the master, until a kill arrives or stdin
   * ends; then asks for the kill. A line that is not a command is logged and skipped.
   */
  private void watchStdin() {
    String reason = "its stdin ended";
    try {
      BufferedReader in =
          new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
      String line;
      while ((line = in.readLine()) != null) {
        if (line.trim().isEmpty()) {
          continue;
        }
        try {
          Map<String, Object> command = Json.parse(line);
          if ("kill".equals(command.get("command"))) {
            reason = "a kill command arrived";
            break;
          }
          obey(command);
        } catch (Json.ParseException | IllegalArgumentException e) {
          Log.info("ignoring a command on stdin (" + e.getMessage() + "): " + line);
        } catch (RuntimeException e) {
          // From YARN's clients: the command failed, but this thread must live on, or the end
          // of stdin would no longer kill the application.
          Log.info("a command on stdin failed (" + e + "): " + line);
        }
      }
    } catch (IOException e) {
      reason = "its stdin broke (" + e + ")";
    }
    kill(reason);
  }

  /** Asks for the application to be killed, for {@code reason} (the first reason wins). */
  static void kill(String reason) {
    Submit submit = current;
    if (submit != null && submit.killRequest.getCount() != 0) {
      submit.killReason = reason;
      submit.killRequest.countDown();
    }
  }

  /** Hands one command other than kill to the master. */
  private void obey(Map<String, Object> command) {
    Master registered = master;
    Object name = command.get("command");
    if (registered == null) {
      throw new IllegalArgumentException("the master has not registered yet");
    }
    if ("request".equals(name)) {
      registered.request(
          positive(command, "memory_mb"), (int) Math.min(positive(command, "vcores"),
              Integer.MAX_VALUE), strings(command, "nodes"));
    } else if ("launch".equals(name)) {
      registered.launch(text(command, "container"), strings(command, "args"));
    } else if ("release".equals(name)) {
      registered.release(text(command, "container"));
    } else if ("finish".equals(name)) {
      String status = text(command, "final_status");
      if (!status.equals("SUCCEEDED") && !status.equals("FAILED")) {
        throw new IllegalArgumentException("final_status must be SUCCEEDED or FAILED");
      }
      Object diagnostics = command.get("diagnostics");
      registered.finish(FinalApplicationStatus.valueOf(status),
          diagnostics == null ? "" : String.valueOf(diagnostics));
    } else {
      throw new IllegalArgumentException("unknown command " + name);
    }
  }

  private static String text(Map<String, Object> command, String member) {
    Object value = command.get(member);
    if (!(value instanceof String) || ((String) value).isEmpty()) {
      throw new IllegalArgumentException("\"" + member + "\" must be a non-empty string");
    }
    return (String) value;
  }

  private static long positive(Map<String, Object> command, String member) {
    Object value = command.get(member);
    try {
      long n = Long.parseLong(String.valueOf(value));
      if (n >= 1) {
        return n;
      }
    } catch (NumberFormatException e) {
      // below
    }
    throw new IllegalArgumentException("\"" + member + "\" must be a whole number >= 1");
  }

  /** A member that is an array of strings (missing: empty). */
  private static List<String> strings(Map<String, Object> command, String member) {
    Object value = command.get(member);
    List<String> out = new ArrayList<>();
    if (value == null) {
      return out;
    }
    if (!(value instanceof List)) {
      throw new IllegalArgumentException("\"" + member + "\" must be an array of strings");
    }
    for (Object item : (List<?>) value) {
      if (!(item instanceof String)) {
        throw new IllegalArgumentException("\"" + member + "\" must be an array of strings");
      }
      out.add((String) item);
    }
    return out;
  }

  /** Stops the master's clients (and the containers still running), if it registered. */
  private void stopMaster() {
    Master registered = master;
    if (registered != null) {
      registered.stop();
    }
  }

  /**
   * Kills the application if it was submitted and has not ended, and deletes its staging
   * directory: what is left to do when Submit fails or the JVM is stopped. Best effort. With
   * {@code report}, the application's end is reported as a finished event (when stopped; a
   * failure was reported as an error event already).
   */
  private synchronized void abandon(String reason, boolean report) {
    if (finished) {
      return;
    }
    if (submitted && yarn != null) {
      try {
        Log.info("killing " + appId + ": " + reason);
        yarn.killApplication(appId, "killed by sluice: " + reason);
        deleteAppDir();
        stopMaster();
        if (report) {
          report(yarn.getApplicationReport(appId));
        }
      } catch (Exception e) {
        Log.info("could not kill " + appId + ": " + e);
      }
    }
    finished = true;
    deleteAppDir();
  }

  /** Deletes the application's staging directory; a missing one is fine. */
  private void deleteAppDir() {
    Path dir = appDir;
    if (dir == null || fs == null) {
      return;
    }
    try {
      fs.delete(dir, true);
    } catch (IOException e) {
      Log.info("could not delete " + dir + ": " + e);
    }
  }

  /**
   * Uploads the binary as {@code DIR/sluice-HASH}, unless this user's own upload of it is
   * there already: a file of that name and length that {@code user} owns and no one else may
   * write. (Its content is not read back: only this user can have put it there, in a
   * directory only this user can write, see {@link #whyNotOwn}.) Concurrent submitters do not
   * see each other's partial files: each writes a file of its own, then renames it into place.
   */
  private FileStatus uploadBinary(Path dir, File local, String user) throws IOException {
    Path dest = new Path(dir, "sluice-" + sha256Prefix(local));
    FileStatus existing = statusOrNull(dest);
    if (isOwnUpload(existing, local, user)) {
      Log.info("reusing " + dest);
      return existing;
    }
    Path scratch = new Path(dir, "." + dest.getName() + "." + UUID.randomUUID() + ".tmp");
    upload(local, scratch, (short) 0755);
    if (existing != null) {
      // Not this user's upload of this binary (another length, owner or mode): replace it.
      Log.info("replacing " + dest + " (" + describe(existing) + ")");
      fs.delete(dest, false);
    }
    if (!fs.rename(scratch, dest)) {
      fs.delete(scratch, false);
      existing = statusOrNull(dest);
      if (isOwnUpload(existing, local, user)) {
        // Another submitter of this user put the same binary in place first.
        return existing;
      }
      throw new IOException("cannot rename " + scratch + " to " + dest);
    }
    Log.info("uploaded " + local + " to " + dest);
    return fs.getFileStatus(dest);
  }

  /** Whether {@code staged} is {@code user}'s upload of {@code local}, closed to others. */
  private static boolean isOwnUpload(FileStatus staged, File local, String user) {
    return staged != null
        && staged.isFile()
        && staged.getLen() == local.length()
        && user.equals(staged.getOwner())
        && !writableByOthers(staged.getPermission());
  }

  /**
   * Why a file kept in {@code dir} for later applications could be put there or replaced by
   * someone other than {@code user} ({@code dir} belongs to another user, or its group or
   * others may write to it), or null if it could not.
   */
  private String whyNotOwn(Path dir, String user) throws IOException {
    FileStatus status = fs.getFileStatus(dir);
    if (!user.equals(status.getOwner())) {
      return dir + " belongs to " + status.getOwner() + ", not " + user;
    }
    if (writableByOthers(status.getPermission())) {
      return dir + " may be written by others (mode " + status.getPermission() + ")";
    }
    return null;
  }

  private static boolean writableByOthers(FsPermission permission) {
    return permission.getGroupAction().implies(FsAction.WRITE)
        || permission.getOtherAction().implies(FsAction.WRITE);
  }

  private static String describe(FileStatus status) {
    return status.getLen() + " bytes, owner " + status.getOwner() + ", mode "
        + status.getPermission();
  }

  /**
   * Copies the local file to {@code dest} with permission {@code mode} (set again after the
   * file is written, since the client's umask applies to the permission given at creation; it
   * can only take bits away, so the file is never more open than {@code mode}).
   */
  private FileStatus upload(File local, Path dest, short mode) throws IOException {
    FsPermission permission = new FsPermission(mode);
    try (InputStream in = new FileInputStream(local);
        FSDataOutputStream out =
            fs.create(dest, permission, false, 1 << 16, fs.getDefaultReplication(dest),
                fs.getDefaultBlockSize(dest), null)) {
      IOUtils.copyBytes(in, out, 1 << 16);
    }
    fs.setPermission(dest, permission);
    return fs.getFileStatus(dest);
  }

  /** Creates {@code dir} with permission {@code mode} if it does not exist (left alone if so). */
  private void makeDirectory(Path dir, short mode) throws IOException {
    if (statusOrNull(dir) != null) {
      return;
    }
    FsPermission permission = new FsPermission(mode);
    fs.mkdirs(dir, permission);
    fs.setPermission(dir, permission);
  }

  /**
   * Why the NodeManagers would refuse {@code file} as a PUBLIC resource (the file must be
   * world-readable, every directory above it world-executable), or null if they would not.
   */
  private String whyNotPublic(Path file) throws IOException {
    if (!fs.getFileStatus(file).getPermission().getOtherAction().implies(FsAction.READ)) {
      return file + " is not world-readable";
    }
    for (Path dir = file.getParent(); dir != null; dir = dir.getParent()) {
      FsPermission permission = fs.getFileStatus(dir).getPermission();
      if (!permission.getOtherAction().implies(FsAction.EXECUTE)) {
        return dir + " is not world-executable (mode " + permission + ")";
      }
    }
    return null;
  }

  private FileStatus statusOrNull(Path path) throws IOException {
    try {
      return fs.getFileStatus(path);
    } catch (FileNotFoundException e) {
      return null;
    }
  }

  /** The first 16 hex digits of the SHA-256 of a local file's content. */
  static String sha256Prefix(File file) throws IOException {
    MessageDigest digest;
    try {
      digest = MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IOException(e);
    }
    try (InputStream in = new FileInputStream(file)) {
      byte[] buf = new byte[1 << 16];
      for (int n; (n = in.read(buf)) > 0; ) {
        digest.update(buf, 0, n);
      }
    }
    StringBuilder hex = new StringBuilder();
    byte[] hash = digest.digest();
    for (int i = 0; i < 8; i++) {
      hex.append(String.format("%02x", hash[i] & 0xff));
    }
    return hex.toString();
  }

  /** The checked command line. */
  private static final class Options {
    final String name;
    final String queue;
    final File binary;
    final File secret;
    final String stagingRoot;

    Options(Cli cli) throws Cli.UsageException {
      name = cli.required("name");
      queue = cli.get("queue", "default");
      if (queue.isEmpty()) {
        throw new Cli.UsageException("option --queue must not be empty");
      }
      binary = readableFile(cli, "binary");
      secret = readableFile(cli, "secret-file");
      stagingRoot = cli.get("staging-root", null);
      if (stagingRoot != null && stagingRoot.isEmpty()) {
        throw new Cli.UsageException("option --staging-root must not be empty");
      }
    }

    private static File readableFile(Cli cli, String option) throws Cli.UsageException {
      File file = new File(cli.required(option));
      if (!file.isFile() || !file.canRead()) {
        throw new Cli.UsageException(
            "option --" + option + ": " + file + " is not a readable file");
      }
      return file;
    }
  }
}
