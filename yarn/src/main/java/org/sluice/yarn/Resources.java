package org.sluice.yarn;

import java.net.URI;
import java.net.URISyntaxException;

import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.yarn.api.records.LocalResource;
import org.apache.hadoop.yarn.api.records.LocalResourceType;
import org.apache.hadoop.yarn.api.records.LocalResourceVisibility;
import org.apache.hadoop.yarn.api.records.URL;

/**
 * Local resources (files a NodeManager downloads into a container's working directory), and
 * how {@link Submit} hands those of the workers to {@link AppMaster} on its command line:
 * {@code NAME=VISIBILITY,SIZE,TIMESTAMP,URI}.
 *
 * <p>The size and modification time are part of the description because a NodeManager checks
 * them against the file before it downloads it, and refuses a file that changed.
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

  /** {@code name} and {@code resource} as one {@code --resource} value of the AppMaster. */
  static String encode(String name, LocalResource resource) throws URISyntaxException {
    return name
        + "="
        + resource.getVisibility()
        + ","
        + resource.getSize()
        + ","
        + resource.getTimestamp()
        + ","
        + resource.getResource().toPath().toUri();
  }

  /** The name part of an encoded resource. */
  static String name(String encoded) {
    int eq = encoded.indexOf('=');
    if (eq <= 0) {
      throw new IllegalArgumentException("not NAME=VISIBILITY,SIZE,TIMESTAMP,URI: " + encoded);
    }
    return encoded.substring(0, eq);
  }

  /** The resource of an encoded one (the inverse of {@link #encode}, without the name). */
  static LocalResource decode(String encoded) {
    String[] parts = encoded.substring(name(encoded).length() + 1).split(",", 4);
    if (parts.length != 4) {
      throw new IllegalArgumentException("not NAME=VISIBILITY,SIZE,TIMESTAMP,URI: " + encoded);
    }
    return LocalResource.newInstance(
        URL.fromURI(URI.create(parts[3])),
        LocalResourceType.FILE,
        LocalResourceVisibility.valueOf(parts[0]),
        Long.parseLong(parts[1]),
        Long.parseLong(parts[2]));
  }
}
