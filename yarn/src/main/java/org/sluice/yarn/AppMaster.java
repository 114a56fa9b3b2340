package org.sluice.yarn;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.yarn.api.ApplicationConstants;
import org.apache.hadoop.yarn.api.ApplicationConstants.Environment;
import org.apache.hadoop.yarn.api.records.Container;
import org.apache.hadoop.yarn.api.records.ContainerExitStatus;
import org.apache.hadoop.yarn.api.records.ContainerId;
import org.apache.hadoop.yarn.api.records.ContainerLaunchContext;
import org.apache.hadoop.yarn.api.records.ContainerStatus;
import org.apache.hadoop.yarn.api.records.FinalApplicationStatus;
import org.apache.hadoop.yarn.api.records.LocalResource;
import org.apache.hadoop.yarn.api.records.Priority;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.client.api.AMRMClient.ContainerRequest;
import org.apache.hadoop.yarn.client.api.async.AMRMClientAsync;
import org.apache.hadoop.yarn.client.api.async.NMClientAsync;
import org.apache.hadoop.yarn.conf.YarnConfiguration;

/**
 * The application master of a sluice job on YARN. It only brokers containers: it asks the
 * ResourceManager for {@code --workers} containers and runs {@code ./sluice worker ARGS
 * --secret-file secret} in each, with the {@code --resource} files (the sluice binary and the
 * secret) in their working directories. The workers talk to the job's coordinator themselves.
 *
 * <p>A worker that exits with 0 is done. One that exits otherwise, or whose container is lost
 * or preempted, is a failure and gets a replacement, until more than
 * {@code --max-worker-failures} have failed. When all workers are done the master unregisters
 * with SUCCEEDED; after too many failures, with FAILED and diagnostics naming the failed
 * containers. Then it deletes the application's staging directory ({@code --app-dir}) and
 * exits. What happens to the containers goes to an {@link EventLog} in that directory, which
 * {@link Submit} relays to the coordinator. {@link Submit} starts it with this command line:
 *
 * <pre>
 * AppMaster --app-dir URI --workers N --worker-memory-mb MB --worker-vcores V
 *     --max-worker-failures K --resource NAME=VISIBILITY,SIZE,TIMESTAMP,URI ...
 *     [--worker-arg ARG ...]
 * </pre>
 */
public final class AppMaster {
  /** Every worker container is asked for at this priority. */
  private static final Priority PRIORITY = Priority.newInstance(0);
  /** Milliseconds between heartbeats to the ResourceManager (it hands out containers then). */
  private static final int HEARTBEAT_MILLIS = 500;

  private final Configuration conf = new YarnConfiguration();
  private final Path appDir;
  private final int workers;
  private final int maxFailures;
  private final Resource capability;
  private final Map<String, LocalResource> resources = new HashMap<>();
  private final List<String> workerArgs;
  private AMRMClientAsync<ContainerRequest> rm;
  private NMClientAsync nm;
  private ByteBuffer tokens;
  /** Where container events go for the coordinator ({@link EventLog}); null if it cannot. */
  private EventLog events;

  // The state below is shared by the clients' callback threads; guarded by `this`.
  private final Deque<ContainerRequest> pending = new ArrayDeque<>();
  private final Set<ContainerId> running = new HashSet<>();
  /** The node of each container started, for the events. */
  private final Map<ContainerId, String> nodes = new HashMap<>();
  private final List<String> failures = new ArrayList<>();
  private int done;
  private FinalApplicationStatus result;
  private String diagnostics;
  private boolean shutdownRequested;

  private AppMaster(Cli cli) throws Cli.UsageException {
    appDir = new Path(cli.required("app-dir"));
    workers = cli.intNumber("workers", 1, 1);
    maxFailures = cli.intNumber("max-worker-failures", workers, 0);
    capability =
        Resource.newInstance(
            cli.number("worker-memory-mb", 1024, 1), cli.intNumber("worker-vcores", 1, 1));
    for (String encoded : cli.all("resource")) {
      resources.put(Resources.name(encoded), Resources.decode(encoded));
    }
    workerArgs = cli.all("worker-arg");
  }

  /** Runs the master (command line above) and exits the JVM: 0 if all workers succeeded. */
  public static void main(String[] args) {
    Log.setup("sluice-yarn master");
    int status;
    try {
      Cli cli = new Cli(args,
          new HashSet<>(Arrays.asList("app-dir", "workers", "worker-memory-mb", "worker-vcores",
              "max-worker-failures")),
          new HashSet<>(Arrays.asList("resource", "worker-arg")));
      status = new AppMaster(cli).run();
    } catch (Throwable e) {
      Log.info("failed: " + e);
      e.printStackTrace();
      status = 1;
    }
    // The clients leave non-daemon threads behind.
    System.exit(status);
  }

  private int run() throws Exception {
    tokens = Tokens.forWorkers();
    try {
      events = EventLog.create(new Path(appDir, EventLog.NAME), conf);
    } catch (IOException e) {
      Log.info("cannot write container events for the coordinator: " + e);
    }
    rm = AMRMClientAsync.createAMRMClientAsync(HEARTBEAT_MILLIS, new ResourceManagerEvents());
    rm.init(conf);
    rm.start();
    nm = NMClientAsync.createNMClientAsync(new NodeManagerEvents());
    nm.init(conf);
    nm.start();
    String host = System.getenv(Environment.NM_HOST.name());
    rm.registerApplicationMaster(host == null ? "" : host, -1, "");
    Log.info("asking for " + workers + " containers of " + capability);
    synchronized (this) {
      for (int i = 0; i < workers; i++) {
        requestContainer(null);
      }
      while (result == null) {
        wait();
      }
    }
    Log.info("finishing: " + result + ": " + diagnostics);
    if (events != null) {
      events.close();
    }
    if (!shutdownRequested) {
      try {
        rm.unregisterApplicationMaster(result, diagnostics, null);
      } catch (Exception e) {
        Log.info("could not unregister: " + e);
      }
    }
    try {
      appDir.getFileSystem(conf).delete(appDir, true);
    } catch (IOException e) {
      Log.info("could not delete " + appDir + ": " + e);
    }
    // Stops the workers still running (after a failure), then the heartbeats.
    nm.stop();
    rm.stop();
    return result == FinalApplicationStatus.SUCCEEDED ? 0 : 1;
  }

  /**
   * Asks for one worker container. {@code hosts} (null for anywhere) names the nodes it should
   * run on, preferably: where a worker runs does not matter yet, but the input's locations may
   * one day.
   */
  private void requestContainer(String[] hosts) {
    ContainerRequest request = new ContainerRequest(capability, hosts, null, PRIORITY, true);
    pending.add(request);
    rm.addContainerRequest(request);
  }

  /** The launch context of a worker: binary, secret, command, and the file system tokens. */
  private ContainerLaunchContext workerContainer() {
    List<String> args = new ArrayList<>(workerArgs);
    args.add("--secret-file");
    args.add("secret");
    String command =
        "./sluice worker " + Shell.words(args)
            + " 1>" + ApplicationConstants.LOG_DIR_EXPANSION_VAR + "/stdout"
            + " 2>" + ApplicationConstants.LOG_DIR_EXPANSION_VAR + "/stderr";
    return ContainerLaunchContext.newInstance(resources, Collections.<String, String>emptyMap(),
        Collections.singletonList(command), null, tokens.duplicate(), null);
  }

  /** Tells the coordinator about a container, through the event log (if there is one). */
  private void event(String... namesAndValues) {
    if (events != null) {
      events.write(Json.object(namesAndValues));
    }
  }

  /**
   * Whether a failed worker is being replaced: failures are still allowed and the
   * application goes on.
   */
  private synchronized boolean replacing() {
    return result == null && failures.size() <= maxFailures;
  }

  /** Counts a failed worker, and asks for a replacement while failures are allowed. */
  private synchronized void failed(String what) {
    failures.add(what);
    Log.info("failure " + failures.size() + " of at most " + maxFailures + ": " + what);
    if (failures.size() <= maxFailures && result == null) {
      requestContainer(null);
    }
    settle();
  }

  /** Ends the application once all workers are done or too many have failed. */
  private synchronized void settle() {
    if (done == workers) {
      finish(FinalApplicationStatus.SUCCEEDED, workers + " workers finished");
    } else if (failures.size() > maxFailures) {
      finish(FinalApplicationStatus.FAILED, failures.size() + " worker containers failed, more"
          + " than --max-worker-failures " + maxFailures + " allows: "
          + String.join("; ", failures));
    }
  }

  /** Records how the application ends (the first call wins) and wakes {@link #run}. */
  private synchronized void finish(FinalApplicationStatus status, String why) {
    if (result == null) {
      result = status;
      diagnostics = why;
      notifyAll();
    }
  }

  /**
   * A container's diagnostics on one line, cut short. When they end with the last bytes of
   * the container's stderr, as a NodeManager's do for a failed command, only those: they say
   * what went wrong, the rest is boilerplate.
   */
  private static String brief(String text) {
    String line = text == null ? "" : text.trim().replaceAll("\\s+", " ");
    String[] parts = line.split("Last \\d+ bytes of stderr : ?");
    String stderr = parts[parts.length - 1].replaceAll("\\[[-0-9 :.]+\\]Container exited.*", "");
    if (parts.length > 1 && !stderr.trim().isEmpty()) {
      line = "stderr: " + stderr.trim();
    }
    return line.length() <= 400 ? line : "..." + line.substring(line.length() - 400);
  }

  /** What the ResourceManager reports: allocated and completed containers, errors. */
  private final class ResourceManagerEvents extends Callbacks.ResourceManager {
    @Override
    public void onContainersAllocated(List<Container> containers) {
      synchronized (AppMaster.this) {
        for (Container container : containers) {
          // The ResourceManager may hand out more than was asked for (requests are withdrawn
          // one heartbeat late), or some after the end: those go back at once.
          if (result != null || pending.isEmpty() || running.size() + done >= workers) {
            rm.releaseAssignedContainer(container.getId());
            continue;
          }
          rm.removeContainerRequest(pending.poll());
          running.add(container.getId());
          nodes.put(container.getId(), String.valueOf(container.getNodeId()));
          Log.info("starting a worker in " + container.getId() + " on "
              + container.getNodeId());
          event("event", "container_started", "container", String.valueOf(container.getId()),
              "node", String.valueOf(container.getNodeId()));
          nm.startContainerAsync(container, workerContainer());
        }
      }
    }

    @Override
    public void onContainersCompleted(List<ContainerStatus> statuses) {
      synchronized (AppMaster.this) {
        for (ContainerStatus status : statuses) {
          if (!running.remove(status.getContainerId())) {
            continue; // one that was released, or failed to start
          }
          if (status.getExitStatus() == ContainerExitStatus.SUCCESS) {
            done++;
            Log.info("worker " + status.getContainerId() + " done (" + done + " of " + workers
                + ")");
            settle();
          } else {
            failed(status.getContainerId() + " exited with status " + status.getExitStatus()
                + " (" + brief(status.getDiagnostics()) + ")");
          }
          event("event", "container_ended", "container", String.valueOf(status.getContainerId()),
              "node", nodes.remove(status.getContainerId()),
              "exit_status", String.valueOf(status.getExitStatus()),
              "diagnostics", brief(status.getDiagnostics()),
              "replaced", String.valueOf(status.getExitStatus() != ContainerExitStatus.SUCCESS
                  && replacing()));
        }
      }
    }

    @Override
    public void onShutdownRequest() {
      // The application was killed, or the ResourceManager no longer knows this attempt:
      // there is nobody to unregister with.
      synchronized (AppMaster.this) {
        shutdownRequested = true;
        finish(FinalApplicationStatus.KILLED, "the ResourceManager asked the master to stop");
      }
    }

    @Override
    public float getProgress() {
      synchronized (AppMaster.this) {
        return (float) done / workers;
      }
    }

    @Override
    public void onError(Throwable e) {
      finish(FinalApplicationStatus.FAILED, "the application master failed: " + e);
    }
  }

  /** What the NodeManagers report: only a container that could not start matters. */
  private final class NodeManagerEvents extends Callbacks.NodeManager {
    @Override
    public void onStartContainerError(ContainerId id, Throwable e) {
      synchronized (AppMaster.this) {
        if (running.remove(id)) {
          rm.releaseAssignedContainer(id);
          failed(id + " could not start (" + brief(String.valueOf(e)) + ")");
          event("event", "container_not_started", "container", String.valueOf(id),
              "node", nodes.remove(id), "diagnostics", brief(String.valueOf(e)),
              "replaced", String.valueOf(replacing()));
        }
      }
    }
  }
}
