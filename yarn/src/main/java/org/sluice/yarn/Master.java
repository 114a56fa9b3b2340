package org.sluice.yarn;

import java.io.IOException;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.api.ApplicationConstants;
import org.apache.hadoop.yarn.api.protocolrecords.RegisterApplicationMasterResponse;
import org.apache.hadoop.yarn.api.records.Container;
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

/**
 * The application's master, run inside {@link Submit}'s JVM (YARN's "unmanaged" master: it
 * takes no container of its own). It only brokers containers, and decides nothing: it asks the
 * ResourceManager for the containers the coordinator requests, starts in them the commands the
 * coordinator gives, releases those it is told to release, and reports everything YARN says
 * about them as events. How many workers to run, where, when to replace one, and how the
 * application ends are the coordinator's decisions (see yarn/README.md, "Commands").
 *
 * <p>Every method may be called from {@link Submit}'s stdin thread while the clients' callback
 * threads report; the state is guarded by {@code this}.
 */
final class Master {
  /** Every worker container is asked for at this priority. */
  private static final Priority PRIORITY = Priority.newInstance(0);
  /** Milliseconds between heartbeats to the ResourceManager (it hands out containers then). */
  private static final int HEARTBEAT_MILLIS = 250;

  private final Configuration conf;
  private final Map<String, LocalResource> resources;
  private final ByteBuffer tokens;
  private AMRMClientAsync<ContainerRequest> rm;
  private NMClientAsync nm;

  /** Requests not yet answered with a container, oldest first. */
  private final Deque<ContainerRequest> pending = new ArrayDeque<>();
  /** Containers allocated and not yet completed or released, by id. */
  private final Map<String, Container> containers = new HashMap<>();
  /** The node (HOST:PORT) of each container allocated and not yet completed, by id. */
  private final Map<String, String> nodeOf = new HashMap<>();
  private boolean stopped;

  /**
   * A master whose containers get {@code resources} (name to file) in their working
   * directories and {@code tokens} (null: none) in their launch contexts.
   */
  Master(Configuration conf, Map<String, LocalResource> resources, ByteBuffer tokens) {
    this.conf = conf;
    this.resources = resources;
    this.tokens = tokens;
  }

  /**
   * Registers with the ResourceManager, with the application's AMRM token (which the caller
   * added to the current user), and reports it with the largest container allowed.
   */
  synchronized void register() throws Exception {
    rm = AMRMClientAsync.createAMRMClientAsync(HEARTBEAT_MILLIS, new ResourceManagerEvents());
    rm.init(conf);
    rm.start();
    nm = NMClientAsync.createNMClientAsync(new NodeManagerEvents());
    // YARN stops the containers itself when the application ends (unregistered or killed);
    // stopping them one by one from here would wait on every NodeManager that is down.
    nm.getClient().cleanupRunningContainersOnStop(false);
    nm.init(conf);
    nm.start();
    // The host shown as the master's in YARN's interfaces: this one, where sluice runs.
    String host;
    try {
      host = InetAddress.getLocalHost().getHostName();
    } catch (IOException e) {
      host = "";
    }
    RegisterApplicationMasterResponse response = rm.registerApplicationMaster(host, -1, "");
    Resource max = response.getMaximumResourceCapability();
    Submit.emit(
        Json.object(
            "event", "registered",
            "max_memory_mb", Long.toString(max.getMemorySize()),
            "max_vcores", Integer.toString(max.getVirtualCores())));
  }

  /**
   * Asks for one container of {@code memoryMb} and {@code vcores}, preferably on one of
   * {@code nodes} (host names; empty for anywhere), anywhere if those have no room.
   */
  synchronized void request(long memoryMb, int vcores, List<String> nodes) {
    if (stopped) {
      return;
    }
    String[] hosts = nodes.isEmpty() ? null : nodes.toArray(new String[0]);
    ContainerRequest request =
        new ContainerRequest(Resource.newInstance(memoryMb, vcores), hosts, null, PRIORITY, true);
    pending.add(request);
    rm.addContainerRequest(request);
  }

  /**
   * Starts {@code ./sluice ARGS} in an allocated container, stdout and stderr to its log
   * directory. An unknown container is reported as not started.
   */
  synchronized void launch(String id, List<String> args) {
    Container container = containers.get(id);
    if (container == null || stopped) {
      Submit.emit(Json.object("event", "container_not_started", "container", id, "node", "",
          "diagnostics", "no such container allocated"));
      return;
    }
    String command =
        "./sluice " + Shell.words(args)
            + " 1>" + ApplicationConstants.LOG_DIR_EXPANSION_VAR + "/stdout"
            + " 2>" + ApplicationConstants.LOG_DIR_EXPANSION_VAR + "/stderr";
    ContainerLaunchContext context =
        ContainerLaunchContext.newInstance(resources, Collections.<String, String>emptyMap(),
            Collections.singletonList(command), null,
            tokens == null ? null : tokens.duplicate(), null);
    nm.startContainerAsync(container, context);
  }

  /** Gives an allocated container back (stopping what runs in it). */
  synchronized void release(String id) {
    Container container = containers.remove(id);
    if (container != null && !stopped) {
      rm.releaseAssignedContainer(container.getId());
    }
  }

  /**
   * Unregisters with {@code status} and {@code diagnostics}, stops the containers still
   * running and the clients. Called once; later calls do nothing.
   */
  void finish(FinalApplicationStatus status, String diagnostics) {
    synchronized (this) {
      if (stopped || rm == null) {
        return;
      }
      stopped = true;
    }
    try {
      rm.unregisterApplicationMaster(status, diagnostics, null);
    } catch (Exception e) {
      Log.info("could not unregister: " + e);
    }
    stop();
  }

  /** Stops the clients without unregistering (the application was killed, or has failed). */
  void stop() {
    synchronized (this) {
      stopped = true;
    }
    // Outside the lock: stopping waits for the callback threads, which take it.
    if (nm != null) {
      nm.stop();
    }
    if (rm != null) {
      rm.stop();
    }
  }

  /** A container's diagnostics on one line, cut short to their telling part. */
  static String brief(String text) {
    String line = text == null ? "" : text.trim().replaceAll("\\s+", " ");
    // When they end with the last bytes of the container's stderr, as a NodeManager's do for
    // a failed command, only those: they say what went wrong, the rest is boilerplate.
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
    public void onContainersAllocated(List<Container> allocated) {
      List<String> lines = new ArrayList<>();
      synchronized (Master.this) {
        for (Container container : allocated) {
          if (stopped) {
            rm.releaseAssignedContainer(container.getId());
            continue;
          }
          // Withdrawn now, so the next heartbeat does not ask for it again.
          ContainerRequest answered = pending.poll();
          if (answered != null) {
            rm.removeContainerRequest(answered);
          }
          String id = String.valueOf(container.getId());
          containers.put(id, container);
          nodeOf.put(id, String.valueOf(container.getNodeId()));
          lines.add(Json.object("event", "allocated", "container", id,
              "node", String.valueOf(container.getNodeId()),
              "host", container.getNodeId().getHost(),
              "memory_mb", Long.toString(container.getResource().getMemorySize()),
              "vcores", Integer.toString(container.getResource().getVirtualCores())));
        }
      }
      for (String line : lines) {
        Submit.emit(line);
      }
    }

    @Override
    public void onContainersCompleted(List<ContainerStatus> statuses) {
      for (ContainerStatus status : statuses) {
        String id = String.valueOf(status.getContainerId());
        String node;
        synchronized (Master.this) {
          containers.remove(id);
          // Also for a container released, or not started, before it completed.
          node = nodeOf.remove(id);
        }
        Submit.emit(Json.object("event", "container_ended", "container", id,
            "node", node == null ? "" : node,
            "exit_status", String.valueOf(status.getExitStatus()),
            "diagnostics", brief(status.getDiagnostics())));
      }
    }

    @Override
    public void onShutdownRequest() {
      // The application was killed, or the ResourceManager no longer knows this attempt:
      // there is nobody to unregister with. Submit sees the end in the application's report.
      Log.info("the ResourceManager asked the master to stop");
      new Thread(Master.this::stop, "master-stop").start();
    }

    @Override
    public float getProgress() {
      return 0;
    }

    @Override
    public void onError(Throwable e) {
      synchronized (Master.this) {
        if (stopped) {
          // Stopping the client interrupts a heartbeat under way, which it reports here: not
          // a failure of the master.
          Log.info("the master's ResourceManager client stopped: " + e);
          return;
        }
      }
      Log.info("the master's ResourceManager client failed: " + e);
      Submit.emit(Json.object("event", "error", "message", "the application master failed: "
          + e));
      Submit.kill("its master failed: " + e);
    }
  }

  /** What the NodeManagers report: whether a container started. */
  private final class NodeManagerEvents extends Callbacks.NodeManager {
    @Override
    public void onContainerStarted(ContainerId id, Map<String, ByteBuffer> serviceResponse) {
      Container container;
      synchronized (Master.this) {
        container = containers.get(String.valueOf(id));
      }
      Submit.emit(Json.object("event", "container_started", "container", String.valueOf(id),
          "node", container == null ? "" : String.valueOf(container.getNodeId())));
    }

    @Override
    public void onStartContainerError(ContainerId id, Throwable e) {
      Container container;
      synchronized (Master.this) {
        container = containers.remove(String.valueOf(id));
        if (container != null && !stopped) {
          rm.releaseAssignedContainer(id);
        }
      }
      Submit.emit(Json.object("event", "container_not_started", "container", String.valueOf(id),
          "node", container == null ? "" : String.valueOf(container.getNodeId()),
          "diagnostics", brief(String.valueOf(e))));
    }
  }
}
