package org.sluice.yarn;


import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.yarn.api.records.LocalResource;
import org.apache.hadoop.yarn.api.records.LocalResourceType;
import org.apache.hadoop.yarn.api.records.LocalResourceVisibility;
import org.apache.hadoop.yarn.api.records.URL;

/**
 * Local resources: files a NodeManager downloads into a container's working directory. The
 * size and modification time are part of the description because a NodeManager checks them
 * against the file before it downloads it, and refuses a file that changed.
 */
final class Resources {
  private Resources() {}

  /** A resource of type FILE for the file {@code status} describes. */
  static LocalResource file(FileStatus status, LocalResourceVisibility visibility) {
    return LocalResource.newInstance(
        URL.fromPath(status.getPath()),
        LocalResourceType.FILE,
        visibility,
        status.getLen(),
        status.getModificationTime());
  }
}
