package org.sluice.hadoop;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Locale;

/**
 * Loads the sluice library from the jar, once per JVM.
 *
 * <p>The library is the resource {@code native/<os>-<arch>/libsluice_jni.so}. It is extracted
 * into {@code <java.io.tmpdir>/sluice-<user.name>/<sha-256 of the library>/}, so that the task
 * JVMs of one user share one copy per library version and never load a half-written file: the
 * first JVM takes an exclusive lock on a lock file in that directory, writes the library under
 * a temporary name and renames it into place; the others wait for the lock and find it there.
 * The system property {@code sluice.native.library} names a library file to load instead.
 */
public final class NativeLoader {
  private static final String LIBRARY = "libsluice_jni.so";
  private static boolean loaded;
  private static IOException failure;

  private NativeLoader() {}

  /**
   * Loads the library if it is not loaded yet.
   *
   * @throws IOException if there is no library for this platform or it does not load; the
   *     message names the platform
   */
  public static synchronized void load() throws IOException {
    if (loaded) {
      return;
    }
    if (failure != null) {
      throw failure;
    }
    try {
      String override = System.getProperty("sluice.native.library");
      if (override != null) {
        System.load(new File(override).getAbsolutePath());
      } else {
        System.load(extract().getAbsolutePath());
      }
      loaded = true;
    } catch (IOException e) {
      failure = e;
      throw e;
    } catch (UnsatisfiedLinkError | SecurityException e) {
      failure = new IOException("the sluice library does not load on " + platformName() + ": "
          + e.getMessage(), e);
      throw failure;
    }
  }

  /** {@code os.name}/{@code os.arch} as this JVM reports them. */
  static String platformName() {
    return System.getProperty("os.name") + "/" + System.getProperty("os.arch");
  }

  /** The resource directory for this platform, or null if sluice has no library for it. */
  static String platform() {
    String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
    String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
    if (os.startsWith("linux") && (arch.equals("amd64") || arch.equals("x86_64"))) {
      return "linux-x86_64";
    }
    return null;
  }

  @SuppressWarnings("try") // the lock is held by the try block, not used in it
  private static File extract() throws IOException {
    String platform = platform();
    String resource = platform == null ? null : "/native/" + platform + "/" + LIBRARY;
    byte[] bytes = resource == null ? null : read(resource);
    if (bytes == null) {
      throw new IOException("sluice has no native library for " + platformName()
          + " (the jar carries one for linux/amd64 only)");
    }
    String user = System.getProperty("user.name", "user").replaceAll("[^A-Za-z0-9._-]", "_");
    File dir = new File(new File(System.getProperty("java.io.tmpdir"), "sluice-" + user),
        sha256(bytes));
    if (!dir.isDirectory() && !dir.mkdirs() && !dir.isDirectory()) {
      throw new IOException("cannot create " + dir);
    }
    File library = new File(dir, LIBRARY);
    try (FileChannel lockFile = FileChannel.open(new File(dir, ".lock").toPath(),
            StandardOpenOption.CREATE, StandardOpenOption.WRITE);
        FileLock lock = lockFile.lock()) {
      if (library.isFile() && library.length() == bytes.length) {
        return library;
      }
      File partial = File.createTempFile(LIBRARY, ".part", dir);
      try {
        Files.write(partial.toPath(), bytes);
        Files.move(partial.toPath(), library.toPath(), StandardCopyOption.REPLACE_EXISTING,
            StandardCopyOption.ATOMIC_MOVE);
      } finally {
        Files.deleteIfExists(partial.toPath());
      }
      return library;
    }
  }

  private static byte[] read(String resource) throws IOException {
    try (InputStream in = NativeLoader.class.getResourceAsStream(resource)) {
      if (in == null) {
        return null;
      }
      java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream(1 << 20);
      copy(in, out);
      return out.toByteArray();
    }
  }

  private static void copy(InputStream in, OutputStream out) throws IOException {
    byte[] buffer = new byte[64 * 1024];
    for (int n; (n = in.read(buffer)) > 0; ) {
      out.write(buffer, 0, n);
    }
  }

  private static String sha256(byte[] bytes) throws IOException {
    try {
      byte[] digest = MessageDigest.getInstance("SHA-256").digest(bytes);
      StringBuilder hex = new StringBuilder();
      for (int i = 0; i < 12; i++) {
        hex.append(String.format("%02x", digest[i]));
      }
      return hex.toString();
    } catch (NoSuchAlgorithmException e) {
      throw new IOException(e);
    }
  }
}
