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
import java.net.URISyntaxException;
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
import org.apache.hadoop.yarn.api.ApplicationConstants;
import org.apache.hadoop.yarn.api.ApplicationConstants.Environment;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.api.records.ApplicationReport;
import org.apache.hadoop.yarn.api.records.ApplicationSubmissionContext;
import org.apache.hadoop.yarn.api.records.ContainerLaunchContext;
import org.apache.hadoop.yarn.api.records.FinalApplicationStatus;
import org.apache.hadoop.yarn.api.records.LocalResource;
import org.apache.hadoop.yarn.api.records.LocalResourceVisibility;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.api.records.YarnApplicationState;
import org.apache.hadoop.yarn.client.api.YarnClient;
import org.apache.hadoop.yarn.client.api.YarnClientApplication;
import org.apache.hadoop.yarn.conf.YarnConfiguration;

/**
 * Submits a YARN application that runs sluice's workers, and follows it to its end.
 *
 * <p>The {@code sluice} command runs it as a child process, with the cluster's classpath:
 * {@code java -cp "$(hadoop classpath):sluice-yarn.jar" org.sluice.yarn.Submit OPTIONS} (see
 * {@link #USAGE}). It stages the files the containers need on the cluster's file system,
 * submits an application whose master is {@link AppMaster}, and prints what happens to the
 * application on stdout, one JSON object per line, flushed at once:
 *
 * <pre>
 * {"event":"submitted","application":"application_1700000000000_0001"}
 * {"event":"state","state":"ACCEPTED"}            (on every change of state)
 * {"event":"container_started","container":"container_...","node":"HOST:PORT"}
 * {"event":"container_ended","container":"...","node":"...","exit_status":"137",
 *  "diagnostics":"...","replaced":"true"}          (the master's events, see EventLog)
 * {"event":"container_not_started","container":"...","node":"...","diagnostics":"...",
 *  "replaced":"false"}
 * {"event":"finished","state":"FINISHED","final_status":"SUCCEEDED","diagnostics":"..."}
 * {"event":"error","message":"..."}               (instead of finished, when Submit fails)
 * </pre>
 *
 * <p>Its stdin is the other way: when it ends, or a line {@code {"command":"kill"}} arrives,
 * Submit kills the application (if it has not ended yet) and reports how it ended. So the
 * application never outlives the {@code sluice} process that started it. Human-readable
 * messages go to stderr.
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
 *       resource) and this jar, for the application master. Deleted when the application ends,
 *       by Submit and by the master, whichever comes first.
 * </ul>
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
          + "  --workers N                 how many workers to run, at least 1 (required)\n"
          + "  --worker-memory-mb MB       memory of each worker's container (default: 1024)\n"
          + "  --worker-vcores V           virtual cores of each worker's container (default: 1)\n"
          + "  --worker-arg ARG            an argument after `sluice worker` (repeatable)\n"
          + "  --max-worker-failures K     failed containers replaced before the application\n"
          + "                              fails (default: N)\n"
          + "  --staging-root URI          where files are staged\n"
          + "                              (default: FS/user/USER/.sluice-staging)\n"
          + "  --am-memory-mb MB           memory of the application master (default: 512)\n"
          + "\n"
          + "Prints JSON events on stdout; kills the application when stdin ends or a line\n"
          + "{\"command\":\"kill\"} arrives. Exit status: 0 if the application SUCCEEDED, 1 if not,\n"
          + "2 on a bad command line.\n";

  private static final List<String> SINGLE =
      Arrays.asList(
          "name", "queue", "binary", "secret-file", "workers", "worker-memory-mb",
          "worker-vcores", "max-worker-failures", "staging-root", "am-memory-mb");
  private static final List<String> REPEATED = Collections.singletonList("worker-arg");

  /** The application's type in the ResourceManager (what {@code yarn app -list} shows). */
  static final String APPLICATION_TYPE = "SLUICE";

  /** How often the application's state is polled. */
  private static final long POLL_MILLIS = 200;

  /** Polls between two reads of the master's container events (about a second). */
  private static final int RELAY_EVERY_POLLS = 5;

  private static PrintStream events;

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

  /** Prints one event line on stdout, flushed. */
  private static synchronized void emit(String json) {
    events.println(json);
    events.flush();
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
    File jar = ownJar();

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
    Resource max = app.getNewApplicationResponse().getMaximumResourceCapability();
    checkFits("a worker", options.workerMemoryMb, options.workerVcores, max);
    checkFits("the application master", options.amMemoryMb, 1, max);
    ApplicationSubmissionContext context = app.getApplicationSubmissionContext();
    appId = context.getApplicationId();

    // The binary, shared by every application, then the application's own directory.
    makeDirectory(root, (short) 0755);
    Path binDir = new Path(root, "bin");
    makeDirectory(binDir, (short) 0755);
    FileStatus binary = uploadBinary(binDir, options.binary);
    LocalResourceVisibility binaryVisibility = LocalResourceVisibility.PUBLIC;
    String notPublic = whyNotPublic(binary.getPath());
    if (notPublic != null) {
      Log.info("warning: the sluice binary is localized as a PRIVATE resource, not a PUBLIC "
          + "one (cached per user, not shared between users), because " + notPublic);
      binaryVisibility = LocalResourceVisibility.PRIVATE;
    }
    appDir = new Path(root, appId.toString());
    makeDirectory(appDir, (short) 0700);
    FileStatus secret = upload(options.secret, new Path(appDir, "secret"), (short) 0600);
    FileStatus amJar = upload(jar, new Path(appDir, "sluice-yarn.jar"), (short) 0600);

    context.setApplicationName(options.name);
    context.setQueue(options.queue);
    context.setApplicationType(APPLICATION_TYPE);
    // A second attempt of the master would start a second set of workers for a job whose
    // coordinator already counts the first: the application fails instead.
    context.setMaxAppAttempts(1);
    context.setResource(Resource.newInstance(options.amMemoryMb, 1));
    context.setAMContainerSpec(
        masterContainer(
            Resources.file(amJar, LocalResourceVisibility.APPLICATION),
            Resources.encode("sluice", Resources.file(binary, binaryVisibility)),
            Resources.encode("secret", Resources.file(secret, LocalResourceVisibility.PRIVATE)),
            user));

    if (killRequest.getCount() == 0) {
      throw new IOException("not submitted: " + killReason);
    }
    yarn.submitApplication(context);
    submitted = true;
    Log.info("submitted " + appId + " (" + options.name + ") to queue " + options.queue);
    emit(Json.object("event", "submitted", "application", appId.toString()));
    return follow();
  }

  /**
   * Polls the application until it ends, printing its states, and kills it when asked to.
   * Returns the exit status.
   */
  private int follow() throws Exception {
    boolean killSent = false;
    EventLog.Tail masterEvents = new EventLog.Tail(new Path(appDir, EventLog.NAME), conf);
    for (int poll = 0; ; poll++) {
      ApplicationReport report = yarn.getApplicationReport(appId);
      boolean ending = isEnd(report.getYarnApplicationState());
      if (ending || poll % RELAY_EVERY_POLLS == 0) {
        relay(masterEvents);
      }
      synchronized (this) {
        if (finished) {
          return 1; // stopped meanwhile: the shutdown hook reported the end
        }
        if (report(report)) {
          deleteAppDir();
          return report.getFinalApplicationStatus() == FinalApplicationStatus.SUCCEEDED ? 0 : 1;
        }
      }
      if (killRequest.getCount() == 0 && !killSent) {
        Log.info("killing " + appId + ": " + killReason);
        // Returns once the ResourceManager has killed it; the next report says KILLED.
        yarn.killApplication(appId, "killed by sluice: " + killReason);
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
    emit(Json.object("event", "finished", "state", state.name(),
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
   * Prints the master's container events written since the last call, as they are. One that
   * cannot be read (the directory gone with the application) is no failure: they only inform.
   */
  private void relay(EventLog.Tail masterEvents) {
    try {
      for (String line : masterEvents.poll()) {
        emit(line);
      }
    } catch (IOException e) {
      Log.info("cannot read the master's container events: " + e);
    }
  }

  /** Reads stdin until a kill command arrives or it ends, then asks for the kill. */
  private void watchStdin() {
    String reason = "its stdin ended";
    try {
      BufferedReader in =
          new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
      String line;
      while ((line = in.readLine()) != null) {
        if (line.replaceAll("\\s", "").equals("{\"command\":\"kill\"}")) {
          reason = "a kill command arrived";
          break;
        }
        if (!line.trim().isEmpty()) {
          Log.info("ignoring an unknown command on stdin: " + line);
        }
      }
    } catch (IOException e) {
      reason = "its stdin broke (" + e + ")";
    }
    killReason = reason;
    killRequest.countDown();
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
   * The launch context of the application master: this jar, the classpath the cluster gives
   * applications, and the command, as Hadoop's distributed shell does it.
   */
  private ContainerLaunchContext masterContainer(
      LocalResource jar, String binary, String secret, String user)
      throws IOException {
    Map<String, LocalResource> resources = new HashMap<>();
    resources.put("sluice-yarn.jar", jar);

    StringBuilder classpath = new StringBuilder(Environment.CLASSPATH.$$());
    classpath.append(ApplicationConstants.CLASS_PATH_SEPARATOR).append("./sluice-yarn.jar");
    for (String entry :
        conf.getStrings(
            YarnConfiguration.YARN_APPLICATION_CLASSPATH,
            YarnConfiguration.DEFAULT_YARN_CROSS_PLATFORM_APPLICATION_CLASSPATH)) {
      classpath.append(ApplicationConstants.CLASS_PATH_SEPARATOR).append(entry.trim());
    }
    Map<String, String> env = new HashMap<>();
    env.put(Environment.CLASSPATH.name(), classpath.toString());
    if (!UserGroupInformation.isSecurityEnabled()) {
      // Without Kerberos, a container's processes may run as the NodeManager's own user; the
      // master acts on the file system as the submitting user (it deletes the 0700 staging
      // directory), as MapReduce's does.
      env.put("HADOOP_USER_NAME", user);
    }

    List<String> args = new ArrayList<>();
    Collections.addAll(args,
        "--app-dir", appDir.toString(),
        "--workers", Integer.toString(options.workers),
        "--worker-memory-mb", Long.toString(options.workerMemoryMb),
        "--worker-vcores", Integer.toString(options.workerVcores),
        "--max-worker-failures", Integer.toString(options.maxWorkerFailures),
        "--resource", binary,
        "--resource", secret);
    for (String arg : options.workerArgs) {
      args.add("--worker-arg");
      args.add(arg);
    }
    // The heap takes half the container: the rest is the JVM's own memory.
    String command =
        Environment.JAVA_HOME.$$() + "/bin/java -Xmx" + options.amMemoryMb / 2 + "m "
            + AppMaster.class.getName() + " " + Shell.words(args)
            + " 1>" + ApplicationConstants.LOG_DIR_EXPANSION_VAR + "/AppMaster.stdout"
            + " 2>" + ApplicationConstants.LOG_DIR_EXPANSION_VAR + "/AppMaster.stderr";

    ContainerLaunchContext container =
        ContainerLaunchContext.newInstance(
            resources, env, Collections.singletonList(command), null, null, null);
    // With Kerberos, the NodeManagers download the files and the master deletes them with
    // delegation tokens.
    container.setTokens(Tokens.forMaster(conf, fs));
    return container;
  }

  /** Fails when a container of {@code memoryMb} and {@code vcores} exceeds {@code max}. */
  private static void checkFits(String what, long memoryMb, int vcores, Resource max)
      throws IOException {
    if (memoryMb > max.getMemorySize() || vcores > max.getVirtualCores()) {
      throw new IOException("the container of " + what + " (" + memoryMb + " MB, " + vcores
          + " vcores) is larger than this cluster allows (" + max.getMemorySize() + " MB, "
          + max.getVirtualCores() + " vcores)");
    }
  }

  /**
   * Uploads the binary as {@code DIR/sluice-HASH}, unless a file of that name and length is
   * there already. Concurrent submitters do not see each other's partial files: each writes a
   * file of its own, then renames it into place.
   */
  private FileStatus uploadBinary(Path dir, File local) throws IOException {
    Path dest = new Path(dir, "sluice-" + sha256Prefix(local));
    FileStatus existing = statusOrNull(dest);
    if (existing != null && existing.getLen() == local.length()) {
      Log.info("reusing " + dest);
      return existing;
    }
    Path scratch = new Path(dir, "." + dest.getName() + "." + UUID.randomUUID() + ".tmp");
    upload(local, scratch, (short) 0755);
    if (existing != null) {
      // A file of the same name but another length: not this binary. Replace it.
      fs.delete(dest, false);
    }
    if (!fs.rename(scratch, dest)) {
      fs.delete(scratch, false);
      existing = statusOrNull(dest);
      if (existing != null && existing.getLen() == local.length()) {
        // Another submitter put the same binary in place first.
        return existing;
      }
      throw new IOException("cannot rename " + scratch + " to " + dest);
    }
    Log.info("uploaded " + local + " to " + dest);
    return fs.getFileStatus(dest);
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

  /** The jar this class was loaded from: the application master runs from the same one. */
  private static File ownJar() throws IOException {
    try {
      File jar =
          new File(Submit.class.getProtectionDomain().getCodeSource().getLocation().toURI());
      if (!jar.isFile()) {
        throw new IOException("Submit must run from sluice-yarn.jar, not from " + jar);
      }
      return jar;
    } catch (URISyntaxException | SecurityException | NullPointerException e) {
      throw new IOException("cannot find the jar Submit runs from: " + e, e);
    }
  }

  /** The checked command line. */
  private static final class Options {
    final String name;
    final String queue;
    final File binary;
    final File secret;
    final int workers;
    final long workerMemoryMb;
    final int workerVcores;
    final List<String> workerArgs;
    final int maxWorkerFailures;
    final String stagingRoot;
    final long amMemoryMb;

    Options(Cli cli) throws Cli.UsageException {
      name = cli.required("name");
      queue = cli.get("queue", "default");
      if (queue.isEmpty()) {
        throw new Cli.UsageException("option --queue must not be empty");
      }
      binary = readableFile(cli, "binary");
      secret = readableFile(cli, "secret-file");
      if (cli.get("workers", null) == null) {
        throw new Cli.UsageException("option --workers is required");
      }
      workers = cli.intNumber("workers", 1, 1);
      workerMemoryMb = cli.number("worker-memory-mb", 1024, 1);
      workerVcores = cli.intNumber("worker-vcores", 1, 1);
      workerArgs = cli.all("worker-arg");
      maxWorkerFailures = cli.intNumber("max-worker-failures", workers, 0);
      stagingRoot = cli.get("staging-root", null);
      if (stagingRoot != null && stagingRoot.isEmpty()) {
        throw new Cli.UsageException("option --staging-root must not be empty");
      }
      amMemoryMb = cli.number("am-memory-mb", 512, 64);
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
