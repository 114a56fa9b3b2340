package org.sluice.yarn;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.yarn.api.records.ContainerId;
import org.apache.hadoop.yarn.api.records.ContainerStatus;
import org.apache.hadoop.yarn.api.records.NodeReport;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.api.records.UpdatedContainer;
import org.apache.hadoop.yarn.client.api.async.AMRMClientAsync;
import org.apache.hadoop.yarn.client.api.async.NMClientAsync;

/**
 * The callbacks of YARN's asynchronous clients that {@link Master} has no use for, as
 * no-ops, so that the master shows only those it acts on.
 */
final class Callbacks {
  private Callbacks() {}

  /** ResourceManager callbacks: the master ignores node updates and container updates. */
  abstract static class ResourceManager extends AMRMClientAsync.AbstractCallbackHandler {
    /** Ignored: the master never asks to change a container's size. */
    @Override
    public void onContainersUpdated(List<UpdatedContainer> containers) {}

    /** Ignored: a lost node's containers are reported as completed, which is what counts. */
    @Override
    public void onNodesUpdated(List<NodeReport> nodes) {}
  }

  /** NodeManager callbacks: the master only reports whether a container started. */
  abstract static class NodeManager extends NMClientAsync.AbstractCallbackHandler {
    /** Ignored: the master never asks for a container's status. */
    @Override
    public void onContainerStatusReceived(ContainerId id, ContainerStatus status) {}

    /** Ignored: containers are stopped only when the master is done with them. */
    @Override
    public void onContainerStopped(ContainerId id) {}

    /** Ignored, as {@link #onContainerStatusReceived}. */
    @Override
    public void onGetContainerStatusError(ContainerId id, Throwable t) {}

    /** Ignored: the master never resizes containers. (Deprecated, but still abstract.) */
    @Override
    @SuppressWarnings("deprecation")
    public void onContainerResourceIncreased(ContainerId id, Resource resource) {}

    /** Ignored: the master never resizes containers. */
    @Override
    public void onContainerResourceUpdated(ContainerId id, Resource resource) {}

    /** Ignored: the master never resizes containers. (Deprecated, but still abstract.) */
    @Override
    @SuppressWarnings("deprecation")
    public void onIncreaseContainerResourceError(ContainerId id, Throwable t) {}

    /** Ignored: the master never resizes containers. */
    @Override
    public void onUpdateContainerResourceError(ContainerId id, Throwable t) {}

    /** Ignored: a container that cannot be stopped ends with the application anyway. */
    @Override
    public void onStopContainerError(ContainerId id, Throwable t) {}
  }
}
