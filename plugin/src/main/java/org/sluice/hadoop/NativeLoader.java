package org.sluice.hadoop;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.Locale;
import java.util.Set;

/**
 * Loads the sluice library from the jar, once per JVM.
 *
 * <p>The library is the resource {@code native/<os>-<arch>/libsluice_jni.so}. It is extracted
 * into {@code <java.io.tmpdir>/sluice-<user.name>/<sha-256 of the library>/}, so that the task
 * JVMs of one user share one copy per library version and never load a half-written file: the
 * first JVM takes an exclusive lock on a lock file in that directory, writes the library under
 * a temporary name and renames it into place; the others wait for the lock and find it there.
 * A copy found there is loaded only if its bytes are the jar's, and {@code sluice-<user.name>}
 * is used only if this user owns it and nobody else may write to it (it is made {@code 0700}):
 * another user of the machine could otherwise have planted a library there for this one to
 * load. When the name is taken by such a directory the library goes into a private directory
 * of this JVM's own, removed when it exits.
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
    Path shared = Paths.get(System.getProperty("java.io.tmpdir"), "sluice-" + user);
    if (!ensurePrivate(shared)) {
      return extractPrivately(bytes);
    }
    Path dir = shared.resolve(sha256(bytes));
    Files.createDirectories(dir);
    File library = dir.resolve(LIBRARY).toFile();
    try (FileChannel lockFile = FileChannel.open(dir.resolve(".lock"),
            StandardOpenOption.CREATE, StandardOpenOption.WRITE);
        FileLock lock = lockFile.lock()) {
      if (library.isFile() && Arrays.equals(Files.readAllBytes(library.toPath()), bytes)) {
        return library;
      }
      File partial = File.createTempFile(LIBRARY, ".part", dir.toFile());
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

  /** Only the owner may read, write or enter: the mode the shared directory is made with. */
  private static final FileAttribute<Set<PosixFilePermission>> OWNER_ONLY =
      PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------"));

  /**
   * Makes {@code dir} ({@code 0700}) unless it exists, then tells whether it is a directory
   * (not a link) that this user owns and nobody else may write to.
   */
  private static boolean ensurePrivate(Path dir) throws IOException {
    try {
      Files.createDirectory(dir, OWNER_ONLY);
    } catch (FileAlreadyExistsException e) {
      // Someone's: examined below.
    }
    PosixFileAttributes attributes;
    UserPrincipal me;
    try {
      attributes = Files.readAttributes(dir, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
      me = dir.getFileSystem().getUserPrincipalLookupService()
          .lookupPrincipalByName(System.getProperty("user.name"));
    } catch (IOException | UnsupportedOperationException e) {
      return false;
    }
    Set<PosixFilePermission> mode = attributes.permissions();
    return attributes.isDirectory() && attributes.owner().equals(me)
        && !mode.contains(PosixFilePermission.GROUP_WRITE)
        && !mode.contains(PosixFilePermission.OTHERS_WRITE);
  }

  /** Writes the library into a new directory of this JVM's own, removed when it exits. */
  private static File extractPrivately(byte[] bytes) throws IOException {
    Path dir = Files.createTempDirectory("sluice-", OWNER_ONLY);
    // Removed in the reverse order of these calls: the library, then its directory.
    dir.toFile().deleteOnExit();
    File library = dir.resolve(LIBRARY).toFile();
    library.deleteOnExit();
    Files.write(library.toPath(), bytes);
    return library;
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
