// Hadoop's local file system with file modes set through java.nio instead of a `chmod`
// process: see local_file_system.py. Compiled at run time with Janino (jvm_classes.py): no
// generics, no lambdas.

import java.io.IOException;
import java.lang.reflect.Field;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermission;
import java.util.HashSet;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.FilterFileSystem;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;

public class DuckLakeLocalFileSystem extends RawLocalFileSystem {
  // The permission bit i of a mode (0 = others' execute ... 8 = owner's read).
  private static final PosixFilePermission[] BITS = {
    PosixFilePermission.OTHERS_EXECUTE, PosixFilePermission.OTHERS_WRITE,
    PosixFilePermission.OTHERS_READ, PosixFilePermission.GROUP_EXECUTE,
    PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_READ,
    PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.OWNER_WRITE,
    PosixFilePermission.OWNER_READ};

  // What `chmod <mode> <path>` does, in this process. Without Hadoop's native library (pyspark
  // ships none), RawLocalFileSystem starts a `chmod` process for every directory it makes and
  // every file it creates. A mode with the sticky bit, or a file system without POSIX modes,
  // goes the way Hadoop goes.
  public void setPermission(Path path, FsPermission permission) throws IOException {
    int mode = permission.toShort();
    if ((mode & ~0777) != 0) {
      super.setPermission(path, permission);
      return;
    }
    HashSet bits = new HashSet();
    for (int i = 0; i < BITS.length; i++) {
      if ((mode & (1 << i)) != 0) {
        bits.add(BITS[i]);
      }
    }
    try {
      Files.setPosixFilePermissions(pathToFile(path).toPath(), bits);
    } catch (UnsupportedOperationException e) {
      super.setPermission(path, permission);
    }
  }

  // Make this the raw file system under the JVM's cached local file system (what
  // `FileSystem.get` returns for `file:` paths to every thread of this JVM, Spark's local-mode
  // tasks included; with Hive's classes on the class path that is Hive's ProxyLocalFileSystem,
  // a LocalFileSystem too). Returns whether it is (now) there; false when the local file
  // system is no LocalFileSystem over Hadoop's raw one (a profile's `fs.file.impl`), which is
  // then left alone.
  public boolean install(Object conf) throws Exception {
    FileSystem local = FileSystem.get(java.net.URI.create("file:///"), (Configuration) conf);
    if (!(local instanceof LocalFileSystem)) {
      return false;
    }
    FileSystem raw = ((LocalFileSystem) local).getRawFileSystem();
    if (raw.getClass().getName().equals(getClass().getName())) {
      return true;
    }
    if (raw.getClass() != RawLocalFileSystem.class) {
      return false;
    }
    initialize(raw.getUri(), raw.getConf());
    setWorkingDirectory(raw.getWorkingDirectory());
    Field field = FilterFileSystem.class.getDeclaredField("fs");
    field.setAccessible(true);
    field.set(local, this);
    return true;
  }
}
